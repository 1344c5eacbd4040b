package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// destinationServer serves one destination connector instance to Conduit.
//
// Run is one owner loop (see flow_destination.go) with a reader that
// receives Conduit's messages and a writer that calls Write and sends the
// acks: whenever the writer is free, everything received so far, up to the
// batching limits, is written in one call (group commit). What has been
// received and not yet acked is bounded; while the bound is reached, the
// reader's messages wait in its inbox, Recv is not called once the inbox
// is full, and gRPC's flow control pushes back on Conduit.
//
// Stop asks the owner to write what it holds without waiting for a batch
// to fill, and returns once the last position Conduit sent has been acked.
// A Stop is never lost: one that arrives before Run has started waits for
// it, as Conduit may send Stop right behind the records it sent.
type destinationServer struct {
	newDestination func(map[string]string) (Destination, error)
	log            *slog.Logger
	halt           *retryHalt         // Stop and Teardown; ends retries and waits
	started        chan struct{}      // closed when Run has started
	stops          chan stopRequest   // Stop's requests to the running owner loop
	runDone        chan struct{}      // closed when Run has returned
	writes         context.Context    // done once Teardown is called: the writes end
	cancelWrites   context.CancelFunc //

	mu  sync.Mutex
	dst *Destination // nil until Configure
	ran bool         // Run was called
}

// stopRequest asks the owner loop to write without waiting and to close
// done once the record at last has been acked (or nacked).
type stopRequest struct {
	last opencdc.Position
	done chan struct{}
}

func newDestinationServer(newDestination func(map[string]string) (Destination, error), log *slog.Logger) *destinationServer {
	writes, cancel := context.WithCancel(context.Background())
	return &destinationServer{
		newDestination: newDestination, log: log, halt: newRetryHalt(),
		started: make(chan struct{}), stops: make(chan stopRequest), runDone: make(chan struct{}),
		writes: writes, cancelWrites: cancel,
	}
}

func (d *destinationServer) Configure(_ context.Context, req pconnector.DestinationConfigureRequest) (pconnector.DestinationConfigureResponse, error) {
	var dst Destination
	err := guard("Configure", func() (err error) {
		dst, err = d.newDestination(req.Config)
		return err
	})
	if err != nil {
		return pconnector.DestinationConfigureResponse{}, status.Error(codes.InvalidArgument, err.Error())
	}
	d.mu.Lock()
	d.dst = &dst
	d.mu.Unlock()
	return pconnector.DestinationConfigureResponse{}, nil
}

func (d *destinationServer) destination() (*Destination, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dst == nil {
		return nil, status.Error(codes.FailedPrecondition, "destination is not configured: Configure must succeed first")
	}
	return d.dst, nil
}

func (d *destinationServer) Open(ctx context.Context, _ pconnector.DestinationOpenRequest) (pconnector.DestinationOpenResponse, error) {
	dst, err := d.destination()
	if err != nil {
		return pconnector.DestinationOpenResponse{}, err
	}
	if err := guard("Open", func() error { return dst.Open(ctx) }); err != nil {
		return pconnector.DestinationOpenResponse{}, fmt.Errorf("open destination: %w", err)
	}
	return pconnector.DestinationOpenResponse{}, nil
}

func (d *destinationServer) Run(ctx context.Context, stream pconnector.DestinationRunStream) error {
	d.mu.Lock()
	if d.ran {
		d.mu.Unlock()
		return status.Error(codes.FailedPrecondition, "destination is already running")
	}
	d.ran = true
	d.mu.Unlock()
	// From here on a Stop waits for this Run, which ends, failing or not.
	close(d.started)
	defer close(d.runDone)
	dst, err := d.destination()
	if err != nil {
		return err
	}
	in, err := batcher.New(dst.Batch, holdFor(dst.Batch), recordSize)
	if err != nil {
		return err
	}

	// Writes outlive the stream's context, keeping what it carries for
	// connector code, so that what was received is written and acked even
	// while Conduit closes the stream; Teardown cancels them.
	writeCtx, cancelWrites := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWrites()
	defer context.AfterFunc(d.writes, cancelWrites)()
	f := &destinationFlow{
		server: d, dst: dst, stream: stream.Server(), in: in,
		ctx: ctx, writeCtx: writeCtx, stops: d.stops,
	}
	err = f.run()
	if err == nil || errors.Is(err, io.EOF) || status.Code(err) == codes.Canceled || ctx.Err() != nil {
		return nil
	}
	d.log.Error("destination stopped with an error", "error", err)
	return err
}

// write writes records and sends one ack per record (see [outcomes]).
func (d *destinationServer) write(ctx context.Context, dst *Destination, stream pconnector.DestinationRunStreamServer, records []opencdc.Record) error {
	return outcomes{write: dst.Write, retry: dst.Retry, classify: dst.Classify, halt: d.halt, log: d.log, send: func(acks []pconnector.DestinationRunResponseAck) error {
		if err := stream.Send(pconnector.DestinationRunResponse{Acks: acks}); err != nil {
			return fmt.Errorf("send acks to Conduit: %w", err)
		}
		return nil
	}}.writeAll(ctx, records)
}

// Stop returns once the record at req.LastPosition has been written and
// acked (or nacked), once Run has ended, or when ctx is done or Teardown
// is called. From the call on, what the server holds is written without
// waiting for a batch to fill or for sdk.batch.delay. A Stop that arrives
// before Run has started waits for it; one without a position returns at
// once, as there is nothing to wait for.
func (d *destinationServer) Stop(ctx context.Context, req pconnector.DestinationStopRequest) (pconnector.DestinationStopResponse, error) {
	d.halt.Stop()
	if len(req.LastPosition) == 0 {
		return pconnector.DestinationStopResponse{}, nil
	}
	fail := func(what string, err error) (pconnector.DestinationStopResponse, error) {
		return pconnector.DestinationStopResponse{}, fmt.Errorf("stop destination: position %q %s: %w", req.LastPosition, what, err)
	}
	select {
	case <-d.started:
	case <-d.halt.aborted():
		return pconnector.DestinationStopResponse{}, nil
	case <-ctx.Done():
		return fail("was never acked, as Run never started", ctx.Err())
	}
	r := stopRequest{last: req.LastPosition, done: make(chan struct{})}
	select {
	case d.stops <- r:
	case <-d.runDone:
		return pconnector.DestinationStopResponse{}, nil
	case <-ctx.Done():
		return fail("was never acked", ctx.Err())
	}
	select {
	case <-r.done:
	case <-d.runDone:
	case <-ctx.Done():
		return fail("was never acked", ctx.Err())
	}
	return pconnector.DestinationStopResponse{}, nil
}

// Teardown cancels writes still in progress (Stop has written and acked
// everything Conduit waits for; acks for anything else can no longer reach
// it), waits for Run to end and tears the connector down. It works whether
// or not Configure, Open or Run ever happened.
func (d *destinationServer) Teardown(ctx context.Context, _ pconnector.DestinationTeardownRequest) (pconnector.DestinationTeardownResponse, error) {
	d.halt.Abort()
	d.cancelWrites()
	d.mu.Lock()
	dst, ran := d.dst, d.ran
	d.mu.Unlock()
	if ran {
		select {
		case <-d.runDone:
		case <-ctx.Done():
			return pconnector.DestinationTeardownResponse{}, fmt.Errorf("teardown destination: Run did not end: %w", ctx.Err())
		}
	}
	if dst == nil {
		return pconnector.DestinationTeardownResponse{}, nil
	}
	if err := guard("Teardown", func() error { return dst.Teardown(ctx) }); err != nil {
		return pconnector.DestinationTeardownResponse{}, fmt.Errorf("teardown destination: %w", err)
	}
	return pconnector.DestinationTeardownResponse{}, nil
}

func (d *destinationServer) LifecycleOnCreated(ctx context.Context, req pconnector.DestinationLifecycleOnCreatedRequest) (pconnector.DestinationLifecycleOnCreatedResponse, error) {
	return pconnector.DestinationLifecycleOnCreatedResponse{}, d.lifecycle(ctx, req.Config, "OnCreated", func(h Hooks) error { return h.created(ctx) })
}

func (d *destinationServer) LifecycleOnUpdated(ctx context.Context, req pconnector.DestinationLifecycleOnUpdatedRequest) (pconnector.DestinationLifecycleOnUpdatedResponse, error) {
	return pconnector.DestinationLifecycleOnUpdatedResponse{}, d.lifecycle(ctx, req.ConfigAfter, "OnUpdated", func(h Hooks) error { return h.updated(ctx, req.ConfigBefore) })
}

func (d *destinationServer) LifecycleOnDeleted(ctx context.Context, req pconnector.DestinationLifecycleOnDeletedRequest) (pconnector.DestinationLifecycleOnDeletedResponse, error) {
	return pconnector.DestinationLifecycleOnDeletedResponse{}, d.lifecycle(ctx, req.Config, "OnDeleted", func(h Hooks) error { return h.deleted(ctx) })
}

// lifecycle runs a hook of the configured destination, or of one built from
// config (see [runHook]).
func (d *destinationServer) lifecycle(ctx context.Context, config map[string]string, name string, hook func(Hooks) error) error {
	d.mu.Lock()
	var configured *Hooks
	if d.dst != nil {
		configured = &d.dst.Hooks
	}
	d.mu.Unlock()
	return runHook(ctx, d.log, name, configured, func() (Hooks, func(context.Context) error, error) {
		dst, err := d.newDestination(config)
		return dst.Hooks, dst.Teardown, err
	}, hook)
}
