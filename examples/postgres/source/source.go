package source

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/metrics"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Source reads its tables' rows and their changes through logical
// replication with the pgoutput plugin. See the package documentation.
//
// Open finds where reading starts (start.go) and launches the reading
// goroutine, which streams changes (stream.go, stream_replicator.go) while the
// snapshot engine reads the tables in chunks between them (engine.go),
// into the queue that Read takes records from. Ack confirms what Conduit
// has processed (acks.go).
type Source struct {
	cfg            Config
	stateIdent     string        // snapshot.stateTable, quoted (engine_state.go)
	statusInterval time.Duration // see the package variable

	conn    *pgx.Conn      // the catalog, the state row, the slot's lock
	repl    *pgconn.PgConn // replication connection
	lost    pg.Outage      // a lost connection that the reader is reconnecting after (stream_reconnect.go)
	catalog catalog        // the tables read
	signals *signals       // signal.table; nil: no signals (signal.go)

	// What Open found to read (start.go).
	engine *engine    // reads the snapshot (engine.go); nil: none
	from   streamFrom // where replication starts, and which changes it skips (stream.go)

	q       *queue
	acks    acks    // what the queue handed out and Conduit acknowledged
	workers workers // the reading goroutine and the lag's

	metrics  sourceMetrics
	measured bool // metrics are on: the snapshot's progress and the lag are worth finding out
}

// New returns a source; it connects in Open.
func New(cfg Config) (*Source, error) {
	if _, err := pgx.ParseConfig(cfg.URL); err != nil {
		return nil, fmt.Errorf(`parameter "url": %s`, pg.Redact(err, cfg.URL))
	}
	// A config built in Go rather than from parameters may leave these
	// unset: they take their parameters' defaults.
	cfg.Snapshot.StateTable = cmp.Or(cfg.Snapshot.StateTable, "connkit_snapshots")
	cfg.Snapshot.FetchSize = cmp.Or(max(cfg.Snapshot.FetchSize, 0), 10000)
	cfg.Snapshot.Parallelism = cmp.Or(max(cfg.Snapshot.Parallelism, 0), 1)
	state, err := stateTable(cfg.Snapshot.StateTable)
	if err != nil {
		return nil, err
	}
	if err := checkSignalConfig(cfg); err != nil {
		return nil, err
	}
	return &Source{cfg: cfg, stateIdent: state, statusInterval: statusInterval}, nil
}

// Open checks the server and the tables, creates the publication and the
// replication slot when missing, and starts reading after from.
func (s *Source) Open(ctx context.Context, from sdk.Position) error {
	s.metrics, s.measured = newSourceMetrics(ctx), metrics.Enabled(ctx)
	if s.measured {
		s.acks.backlog = &backlog{}
	}
	var pos position
	if from != nil {
		var err error
		if pos, err = parsePosition(from); err != nil {
			return err
		}
	}
	slot, err := s.prepare(ctx, from, pos)
	if err != nil {
		return err
	}
	if err := s.start(ctx, from, pos, slot); err != nil {
		return err
	}
	s.launch(ctx)
	return nil
}

// prepare connects, checks the server and the tables, finds the tables
// added since the slot's snapshots (engine.go), creates the publication or
// adds the tables it lacks, claims the slot and opens the replication
// connection. It returns the slot as it was.
func (s *Source) prepare(ctx context.Context, from sdk.Position, pos position) (slotInfo, error) {
	// A database that is starting, or restarting, is waited for.
	if err := pg.WaitForServer(ctx, s.cfg.Reconnect.Timeout, s.cfg.URL, "source", func() (err error) {
		s.conn, err = connectQuery(ctx, s.cfg.URL)
		return err
	}); err != nil {
		return slotInfo{}, s.errorf("connect to PostgreSQL: %s", err)
	}
	if err := checkServer(ctx, s.conn); err != nil {
		return slotInfo{}, err
	}
	if err := s.prepareSignals(ctx); err != nil {
		return slotInfo{}, err
	}
	tables, err := resolveTables(ctx, s.conn, s.cfg.Tables, s.stateIdent)
	if err != nil {
		return slotInfo{}, err
	}
	tables = s.signals.leaveOut(tables)
	s.catalog = newCatalog(tables)
	if err := s.planAddedTables(ctx, from, pos); err != nil {
		return slotInfo{}, err
	}
	if err := ensurePublication(ctx, s.conn, s.cfg.Publication.Name, s.signals.published(tables)); err != nil {
		return slotInfo{}, err
	}
	slot, err := s.claimSlot(ctx)
	if err != nil {
		return slotInfo{}, err
	}
	if s.repl, err = connectReplication(ctx, s.cfg.URL); err != nil {
		return slotInfo{}, s.errorf("open a replication connection to PostgreSQL: %s", err)
	}
	s.acks.confirmed.Store(uint64(slot.confirmed))
	return slot, nil
}

// workers are the source's goroutines: the reading one, which fills the
// queue, and, with metrics on, the lag's.
type workers struct {
	cancel context.CancelCauseFunc
	reader chan struct{} // closed when the reading goroutine has returned
	lag    chan struct{} // closed when the lag's goroutine has returned; nil: none
}

// errTornDown ends the source's goroutines at Teardown.
var errTornDown = errors.New("the source is torn down")

// launch starts the reading goroutine, and the lag's when metrics are on,
// until Teardown. A chunk's reader that fails ends the reading with its
// error.
func (s *Source) launch(ctx context.Context) {
	s.q = newQueue()
	readCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	s.workers.cancel, s.workers.reader = cancel, make(chan struct{})
	if s.engine != nil {
		s.engine.readers.fail = cancel
	}
	go func() {
		defer close(s.workers.reader)
		err := s.read(readCtx)
		if readCtx.Err() != nil {
			err = context.Cause(readCtx)
		}
		if err != nil && !errors.Is(err, errTornDown) {
			s.q.fail(err)
		}
	}()
	if s.measured && s.cfg.Snapshot.Mode != "initial_only" { // no slot to measure
		s.workers.lag = make(chan struct{})
		go func() {
			defer close(s.workers.lag)
			s.lag(readCtx, s.statusInterval)
		}()
	}
}

// stop ends the goroutines and waits for them to return.
func (w *workers) stop() {
	if w.cancel != nil {
		w.cancel(errTornDown)
		<-w.reader
	}
	if w.lag != nil {
		<-w.lag
	}
}

// read streams changes while the snapshot engine reads its chunks, or,
// with snapshot.mode initial_only, copies the tables and stays idle, until
// ctx ends or something fails. The chunks' readers are done when it
// returns.
func (s *Source) read(ctx context.Context) error {
	if e := s.engine; e != nil {
		ctx, cancel := context.WithCancel(ctx)
		defer e.readers.close()
		defer cancel()
		if !e.streamed {
			if err := e.copyAll(ctx); err != nil {
				return err
			}
			return s.idleAfterSnapshot(ctx)
		}
		return s.streamReconnecting(ctx)
	}
	return s.streamReconnecting(ctx)
}

// Read returns the next record.
func (s *Source) Read(ctx context.Context) (sdk.Record, error) {
	recs, err := s.q.take(ctx, 1)
	if err != nil {
		return sdk.Record{}, err
	}
	return recs[0], nil
}

// ReadBatch returns up to max records, waiting for the first.
func (s *Source) ReadBatch(ctx context.Context, max int) ([]sdk.Record, error) {
	return s.q.take(ctx, max)
}

// Ack notes that Conduit has processed the record at pos. For a change, the
// server may now recycle the WAL before its transaction: the reader
// confirms the transaction's commit LSN at its next status update.
func (s *Source) Ack(_ context.Context, pos sdk.Position) error {
	defer s.acks.acked.Add(1)
	if bytes.HasPrefix(pos, snapshotPrefix) {
		return nil
	}
	lsn, err := positionLSN(pos)
	if err != nil {
		return err
	}
	s.acks.backlog.acked(lsn)
	s.acks.confirm(s.capped(uint64(lsn)))
	return nil
}

// Teardown stops reading and closes the connections. The slot and the
// publication stay, for the next Open.
func (s *Source) Teardown(ctx context.Context) error {
	s.workers.stop()
	if s.repl != nil {
		_ = s.repl.Close(ctx)
	}
	if s.conn != nil {
		_ = s.conn.Close(ctx)
	}
	return nil
}

// OnDeleted drops the replication slot and the publication, and deletes
// the slot's row of snapshot.stateTable, when cleanup is set, so the
// server stops keeping WAL for a reader that is gone.
func (s *Source) OnDeleted(ctx context.Context) error {
	if !s.cfg.Cleanup {
		return nil
	}
	conn, err := pgx.Connect(ctx, s.cfg.URL)
	if err != nil {
		return s.errorf("connect to PostgreSQL to drop the replication slot and publication: %s", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := dropReplication(ctx, conn, s.cfg.Slot.Name, s.cfg.Publication.Name); err != nil {
		return errors.New(pg.Redact(err, s.cfg.URL))
	}
	if err := s.forgetSlot(ctx, conn); err != nil {
		return errors.New(pg.Redact(err, s.cfg.URL))
	}
	return nil
}
