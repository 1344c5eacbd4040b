package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/internal/metrics"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// instance is one connector instance a plugin serves, a source (C is
// Source) or a destination (C is Destination): the calls every connector
// has, made in the order the protocol allows and each guarded against
// panics, and the bookkeeping of its one Run. A role's server embeds it
// and adds Run and Stop.
type instance[C Source | Destination] struct {
	role string // "source" or "destination", for errors
	conn Factory
	log  *slog.Logger

	started chan struct{}    // closed when Run starts: Run was called
	runDone chan struct{}    // closed when Run, and what it left running, has ended
	stops   chan stopRequest // Stop's requests to the running owner loop
	turn    chan struct{}    // holds a token while a teardown runs

	mu          sync.Mutex
	c           *C     // nil until Configure
	tornDown    bool   // the connector's Teardown succeeded
	stopMetrics func() // ends serving and logging the metrics; nil until Open
}

func newInstance[C Source | Destination](role string, conn Factory, log *slog.Logger) instance[C] {
	return instance[C]{role: role, conn: conn, log: log,
		started: make(chan struct{}), runDone: make(chan struct{}), stops: make(chan stopRequest), turn: make(chan struct{}, 1)}
}

// configureRole builds the connector of role C from raw.
func configureRole[C Source | Destination](conn Factory, raw map[string]string) (c C, err error) {
	switch p := any(&c).(type) {
	case *Source:
		*p, err = conn.ConfigureSource(raw)
	case *Destination:
		*p, err = conn.ConfigureDestination(raw)
	}
	return c, err
}

// callsOf returns the calls of c, a connector of either role.
func callsOf[C Source | Destination](c *C) Calls {
	switch p := any(c).(type) {
	case *Source:
		return p.Calls
	case *Destination:
		return p.Calls
	}
	return Calls{}
}

// configure builds the connector from raw, the configuration Conduit
// sends; one that it refuses is an InvalidArgument.
func (i *instance[C]) configure(raw map[string]string) error {
	var c C
	err := guard("Configure", func() (err error) {
		c, err = configureRole[C](i.conn, raw)
		return err
	})
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	i.mu.Lock()
	i.c = &c
	i.mu.Unlock()
	return nil
}

// configured returns the configured connector, or why there is none.
func (i *instance[C]) configured() (*C, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.c == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "%s is not configured: Configure must succeed first", i.role)
	}
	return i.c, nil
}

// open serves the connector's metrics, if it has an address for them,
// and opens it.
func (i *instance[C]) open(ctx context.Context, from opencdc.Position) error {
	c, err := i.configured()
	if err != nil {
		return err
	}
	calls := callsOf(c)
	stop, err := i.showMetrics(calls.Metrics)
	if err != nil {
		return fmt.Errorf("open %s: %w", i.role, err)
	}
	i.mu.Lock()
	i.stopMetrics = stop
	i.mu.Unlock()
	ctx = metrics.NewContext(ctx, calls.Metrics.Set)
	if err := guard("Open", func() error { return calls.Open(ctx, from) }); err != nil {
		return fmt.Errorf("open %s: %w", i.role, err)
	}
	return nil
}

// showMetrics serves m at its address, if it has one, and logs a progress
// line every m.LogEvery while records move, until stop is called.
func (i *instance[C]) showMetrics(m Metrics) (stop func(), err error) {
	stopServing := func() {}
	if m.Set != nil && m.Address != "" {
		var at string
		if at, stopServing, err = m.Set.Serve(m.Address); err != nil {
			return nil, err
		}
		i.log.Info("serving metrics at http://"+at+"/metrics", "connector_id", m.Set.Labels().ConnectorID)
	}
	if m.Set == nil || m.LogEvery <= 0 {
		return stopServing, nil
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(m.LogEvery)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if attrs, moved := m.Set.Progress(); moved {
					i.log.Info(i.role+" progress", attrs...) // Conduit adds the connector's ID
				}
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		stopServing()
	}, nil
}

// run makes the instance's one Run, on the stream whose context is ctx: it
// runs f with the configured connector. started is closed first, so that
// a Stop that came before goes on; runDone once f has returned and what
// it left running (the channel f returns, if not nil) has ended too. Run
// returns nil for the ends that are normal: Conduit closed the stream, or
// it was cancelled. Another end is logged.
func (i *instance[C]) run(ctx context.Context, f func(c *C) (lingering <-chan struct{}, err error)) error {
	i.mu.Lock()
	if i.hasRun() {
		i.mu.Unlock()
		return status.Errorf(codes.FailedPrecondition, "%s is already running", i.role)
	}
	close(i.started)
	i.mu.Unlock()
	c, err := i.configured()
	if err != nil {
		close(i.runDone)
		return err
	}
	lingering, err := f(c)
	if lingering == nil {
		close(i.runDone)
	} else {
		go func() { <-lingering; close(i.runDone) }()
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || status.Code(err) == codes.Canceled || ctx.Err() != nil {
		return nil
	}
	i.log.Error(i.role+" stopped with an error", "error", err)
	return err
}

// hasRun reports whether Run was called.
func (i *instance[C]) hasRun() bool {
	select {
	case <-i.started:
		return true
	default:
		return false
	}
}

// stop asks the running owner loop to hand out what it holds without
// waiting, and returns once the record at last has been through it, once
// Run has ended, or with ctx's error.
func (i *instance[C]) stop(ctx context.Context, last opencdc.Position) error {
	r := stopRequest{last: last, done: make(chan struct{})}
	select {
	case i.stops <- r:
	case <-i.runDone:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-r.done:
	case <-i.runDone:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// teardown makes Run end (interrupt tells it to), waits for it, and tears
// the connector down, whether or not Configure, Open or Run ever happened.
// One teardown runs at a time, and once the connector's Teardown succeeded
// it is not called again: a host that tore a connector down and died
// before it ended the process must not have it torn down twice.
func (i *instance[C]) teardown(ctx context.Context, interrupt func()) error {
	select {
	case i.turn <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("teardown %s: another teardown is still in progress: %w", i.role, ctx.Err())
	}
	defer func() { <-i.turn }()
	interrupt()
	i.mu.Lock()
	c, tornDown, stopMetrics := i.c, i.tornDown, i.stopMetrics
	i.mu.Unlock()
	if tornDown {
		return nil
	}
	if i.hasRun() {
		select {
		case <-i.runDone:
		case <-ctx.Done():
			return fmt.Errorf("teardown %s: Run did not end: %w", i.role, ctx.Err())
		}
	}
	if c == nil {
		return nil
	}
	calls := callsOf(c)
	ctx = metrics.NewContext(ctx, calls.Metrics.Set)
	err := guard("Teardown", func() error { return calls.Teardown(ctx) })
	if stopMetrics != nil { // whether or not Teardown succeeded
		stopMetrics()
	}
	i.mu.Lock()
	i.tornDown, i.stopMetrics = err == nil, nil
	i.mu.Unlock()
	if err != nil {
		return fmt.Errorf("teardown %s: %w", i.role, err)
	}
	return nil
}

// lifecycle runs a hook of the configured connector or, when there is none
// (Conduit calls OnDeleted without Configure), of one configured from raw
// for the occasion and torn down afterwards. Conduit fails a connector
// whose lifecycle call does not succeed, so a configuration that does not
// parse is logged, not returned: the hook has nothing to run on.
func (i *instance[C]) lifecycle(ctx context.Context, raw map[string]string, name string, hook func(Calls) error) error {
	i.mu.Lock()
	c := i.c
	i.mu.Unlock()
	if c == nil {
		var fresh C
		if err := guard("Configure", func() (err error) { fresh, err = configureRole[C](i.conn, raw); return err }); err != nil {
			i.log.Warn("lifecycle "+name+" skipped: configuration does not parse", "error", err)
			return nil
		}
		c = &fresh
		if teardown := callsOf(c).Teardown; teardown != nil {
			defer func() { _ = guard("Teardown", func() error { return teardown(ctx) }) }()
		}
	}
	calls := callsOf(c)
	return guard(name, func() error { return hook(calls) })
}

func (c Calls) created(ctx context.Context) error {
	if c.OnCreated == nil {
		return nil
	}
	return c.OnCreated(ctx)
}

func (c Calls) updated(ctx context.Context, previous map[string]string) error {
	if c.OnUpdated == nil {
		return nil
	}
	return c.OnUpdated(ctx, previous)
}

func (c Calls) deleted(ctx context.Context) error {
	if c.OnDeleted == nil {
		return nil
	}
	return c.OnDeleted(ctx)
}
