package source

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/metrics"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Config is the source's configuration.
type Config struct {
	URL      string   `param:"url" validate:"required" desc:"PostgreSQL connection URL, e.g. postgres://user:password@host:5432/db; the role needs the REPLICATION attribute. The password never appears in logs or errors."`
	Tables   []string `param:"tables" validate:"required" desc:"Comma-separated tables to read, each table or schema.table; * for every table in public, schema.* for every table in schema (snapshot.stateTable left out). Every table needs a primary key."`
	Snapshot struct {
		Mode       string `param:"mode" default:"initial" validate:"inclusion=initial|never" desc:"initial: copy the tables' rows first, then stream their changes; never: stream changes only."`
		FetchSize  int    `param:"fetchSize" default:"10000" validate:"gt=0" desc:"Rows the snapshot reads per query, and about how many records the source holds ahead of Conduit."`
		StateTable string `param:"stateTable" default:"connkit_snapshots" desc:"Table (table or schema.table, created when missing) where the source records, per slot, which transactions its snapshot sees, so that a snapshot resumed after a restart gives every record the position it had, and which tables it has snapshotted, so that a table added to tables later is snapshotted while changes stream. If the role may not create it, a resumed snapshot delivers the rows changed since the snapshot began again, under new positions, and added tables are only streamed."`
	} `param:"snapshot"`
	Slot struct {
		Name string `param:"name" default:"connkit" validate:"regex=^[a-z0-9_]{1,63}$" desc:"Logical replication slot, created when missing (one reader at a time): lower-case letters, digits and underscores, at most 63."`
	} `param:"slot"`
	Publication struct {
		Name string `param:"name" default:"connkit" validate:"regex=^[a-z0-9_]{1,63}$" desc:"Publication of the tables, created when missing (tables it lacks are added): lower-case letters, digits and underscores, at most 63."`
	} `param:"publication"`
	Cleanup   bool                 `param:"cleanup" default:"true" desc:"Drop the replication slot and the publication, and delete the slot's row of snapshot.stateTable, when the connector is deleted."`
	Reconnect pg.ReconnectSettings `param:"reconnect"`
}

// Source reads a snapshot of tables, then their changes through logical
// replication with the pgoutput plugin. See the package documentation.
type Source struct {
	cfg Config

	conn   *pgx.Conn      // catalog, then the snapshot's transaction
	repl   *pgconn.PgConn // replication connection
	tables []*sourceTable
	byOID  map[uint32]*sourceTable

	snap  *snapshotFrom // where the snapshot resumes; nil: no snapshot
	adder *adder        // snapshots tables added while streaming (added.go); nil: none
	start pglogrepl.LSN // where replication starts; 0: where the slot is
	skip  position      // the last acked change: it and the changes before it are skipped

	emitted position  // the last change queued; after a reconnection it and the changes before it are skipped
	lost    pg.Outage // a lost connection that the reader is reconnecting after

	resume     *resumed // the snapshot was resumed under a fresh one; nil: it was not
	stateIdent string   // snapshot.stateTable, quoted (snapstate.go)

	statusInterval time.Duration // see the package variable
	typeNames      map[typeKey]string

	q      *queue
	cancel context.CancelFunc
	done   chan struct{} // closed when the reader goroutine has returned

	confirmed  atomic.Uint64 // the LSN confirmed to the server, only ever raised by acks
	produced   atomic.Int64  // records put in the queue
	acked      atomic.Int64  // records acked
	lastCommit atomic.Int64  // when the transaction of the last change queued committed, in Unix nanoseconds; 0: none yet

	metrics  sourceMetrics
	measured bool          // metrics are on: the snapshot's progress and the lag are worth finding out
	backlog  *backlog      // while measured
	lagDone  chan struct{} // closed when the lag's goroutine has returned; nil: none
}

// snapshotFrom is where the snapshot starts: a table's index and the key
// after which to read it (nil: from its start).
type snapshotFrom struct {
	table int
	key   []string
}

// statusInterval is how often the source tells the server, while
// streaming, which LSN it has processed; the server ends a replication
// connection it has not heard from for wal_sender_timeout (60s by default).
var statusInterval = time.Second

// New returns a source; it connects in Open.
func New(cfg Config) (*Source, error) {
	if _, err := pgx.ParseConfig(cfg.URL); err != nil {
		return nil, fmt.Errorf(`parameter "url": %s`, pg.Redact(err, cfg.URL))
	}
	// A config built in Go rather than from parameters may leave it empty.
	cfg.Snapshot.StateTable = cmp.Or(cfg.Snapshot.StateTable, "connkit_snapshots")
	state, err := stateTable(cfg.Snapshot.StateTable)
	if err != nil {
		return nil, err
	}
	return &Source{cfg: cfg, stateIdent: state, statusInterval: statusInterval}, nil
}

func (s *Source) errorf(format string, err error) error {
	return &sourceError{text: fmt.Sprintf(format, pg.Reason(err, s.cfg.URL)), cause: err}
}

// Open checks the server and the tables, creates the publication and the
// replication slot when missing, and starts reading after from.
func (s *Source) Open(ctx context.Context, from sdk.Position) error {
	s.metrics, s.measured = newSourceMetrics(ctx), metrics.Enabled(ctx)
	if s.measured {
		s.backlog = &backlog{}
	}
	var pos position
	if from != nil {
		var err error
		if pos, err = parsePosition(from); err != nil {
			return err
		}
	}
	// A database that is starting, or restarting, is waited for.
	var err error
	if err := pg.WaitForServer(ctx, s.cfg.Reconnect.Timeout, s.cfg.URL, "source", func() (err error) {
		s.conn, err = connectQuery(ctx, s.cfg.URL)
		return err
	}); err != nil {
		return s.errorf("connect to PostgreSQL: %s", err)
	}
	if err := checkServer(ctx, s.conn); err != nil {
		return err
	}
	if s.tables, err = resolveTables(ctx, s.conn, s.cfg.Tables, s.stateIdent); err != nil {
		return err
	}
	s.byOID = make(map[uint32]*sourceTable, len(s.tables))
	for _, t := range s.tables {
		s.byOID[t.oid] = t
	}
	if err := s.planAddedTables(ctx, from, pos); err != nil {
		return err
	}
	if err := ensurePublication(ctx, s.conn, s.cfg.Publication.Name, s.tables); err != nil {
		return err
	}
	slot, err := s.takeSlot(ctx)
	if err != nil {
		return err
	}
	if from != nil && !slot.exists {
		return fmt.Errorf("replication slot %s does not exist, so the changes since position %s are gone: to start over with a fresh snapshot, reset the pipeline's position (e.g. recreate the source connector)", s.cfg.Slot.Name, from)
	}
	if s.repl, err = connectReplication(ctx, s.cfg.URL); err != nil {
		return s.errorf("open a replication connection to PostgreSQL: %s", err)
	}
	s.confirmed.Store(uint64(slot.confirmed))

	switch {
	case from == nil && s.cfg.Snapshot.Mode == "initial":
		// Nothing was acked: start over from a slot created now, reading the
		// tables as they were at the slot's consistent point.
		if slot.exists {
			// Conduit gave no position, yet the slot is there: the pipeline
			// is new to Conduit (its position was reset), or Conduit did
			// not hand back the one it stored. What was delivered before
			// comes again, the rows streamed as changes under new
			// positions, which an exactly-once destination cannot skip.
			sdk.Logger(ctx).Warn(fmt.Sprintf("postgres: Conduit gave no position, but replication slot %s exists: starting over with a new snapshot from a new slot; records delivered before come again", s.cfg.Slot.Name))
			if err := pglogrepl.DropReplicationSlot(ctx, s.repl, s.cfg.Slot.Name, pglogrepl.DropReplicationSlotOptions{}); err != nil {
				return s.errorf("drop the replication slot to start over: %s", err)
			}
		}
		exported, err := s.createSlot(ctx, "EXPORT_SNAPSHOT")
		if err != nil {
			return err
		}
		// The exported snapshot lives until the replication connection runs
		// its next command, so it is imported before anything else.
		if err := s.beginSnapshot(ctx, exported); err != nil {
			return err
		}
		_, view, err := s.snapshotView(ctx)
		if err != nil {
			return err
		}
		if err := s.saveFirstSnapshot(ctx, view); err != nil {
			return err
		}
		if err := s.recordTables(ctx); err != nil {
			return err
		}
		s.snap = &snapshotFrom{}
	case from == nil:
		if !slot.exists {
			if _, err := s.createSlot(ctx, "NOEXPORT_SNAPSHOT"); err != nil {
				return err
			}
		}
	case pos.snapshot():
		// The slot's own snapshot is gone with the connection that created
		// it; the rest of the tables is read under a fresh one, exported by
		// a temporary slot, keeping the row versions the first one saw.
		// Replication still starts at the slot's consistent point (resume.go).
		first, ok, err := s.loadFirstSnapshot(ctx)
		if err != nil {
			return err
		}
		if !ok {
			sdk.Logger(ctx).Warn(fmt.Sprintf(`postgres: no record of slot %s's snapshot in %s (parameter "snapshot.stateTable"): the resumed snapshot reads every row, and delivers the rows changed since the snapshot began again, under new positions`, s.cfg.Slot.Name, s.cfg.Snapshot.StateTable))
			first = txSnapshot{xmax: math.MaxUint64} // every version seen
		}
		tmp := freshSnapshotSlot(s.cfg.Slot.Name)
		created, err := pglogrepl.CreateReplicationSlot(ctx, s.repl, tmp, "pgoutput",
			pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, Temporary: true, SnapshotAction: "EXPORT_SNAPSHOT"})
		if err != nil {
			return s.errorf("create a temporary replication slot to resume the snapshot: %s", err)
		}
		if err := s.beginSnapshot(ctx, created.SnapshotName); err != nil {
			return err
		}
		fresh, _, err := s.snapshotView(ctx)
		if err != nil {
			return err
		}
		until, _ := pglogrepl.ParseLSN(created.ConsistentPoint)
		s.resume = &resumed{table: pos.Table, key: pos.Key, until: until, first: first, horizon: fresh.xmax, changed: map[string]bool{}}
		// The imported snapshot outlives the slot, which would hold WAL.
		if err := pglogrepl.DropReplicationSlot(ctx, s.repl, tmp, pglogrepl.DropReplicationSlotOptions{}); err != nil {
			return s.errorf("drop the temporary replication slot: %s", err)
		}
		sdk.Logger(ctx).Info(fmt.Sprintf("postgres: resuming the snapshot after %s key %v under a fresh snapshot; rows written since the first snapshot come as changes", pos.Table, pos.Key), "table", pos.Table)
		s.snap = &snapshotFrom{table: len(s.tables)}
		for i, t := range s.tables {
			if t.ident == pos.Table {
				s.snap = &snapshotFrom{table: i, key: pos.Key}
				break
			}
			if t.ident > pos.Table {
				s.snap = &snapshotFrom{table: i}
				break
			}
		}
	default:
		s.start, s.skip = pos.lsn(), pos
		if err := s.startAdding(ctx, slot.confirmed); err != nil {
			return err
		}
		if uint64(s.start) > s.confirmed.Load() {
			s.confirmed.Store(uint64(s.start))
		}
	}

	s.q = newQueue(s.cfg.Snapshot.FetchSize)
	readCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.read(readCtx); err != nil && readCtx.Err() == nil {
			s.q.fail(err)
		}
	}()
	if s.measured {
		s.lagDone = make(chan struct{})
		go func() {
			defer close(s.lagDone)
			s.lag(readCtx, s.statusInterval)
		}()
	}
	return nil
}

// createSlot creates the replication slot, exporting a snapshot or not as
// snapshotAction (EXPORT_SNAPSHOT, NOEXPORT_SNAPSHOT) says, and takes its
// consistent point as confirmed. It returns the exported snapshot's name.
func (s *Source) createSlot(ctx context.Context, snapshotAction string) (string, error) {
	created, err := pglogrepl.CreateReplicationSlot(ctx, s.repl, s.cfg.Slot.Name, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: snapshotAction})
	if err != nil {
		return "", s.errorf("create replication slot: %s", err)
	}
	lsn, _ := pglogrepl.ParseLSN(created.ConsistentPoint)
	s.confirmed.Store(uint64(lsn))
	return created.SnapshotName, nil
}

// read copies the snapshot, if one is due, then streams changes, until ctx
// ends or something fails.
func (s *Source) read(ctx context.Context) error {
	if s.snap != nil {
		if err := s.snapshot(ctx); err != nil {
			return err
		}
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

var snapshotPrefix = []byte(`{"table"`)

// Ack notes that Conduit has processed the record at pos. For a change, the
// server may now recycle the WAL before its transaction: the reader
// confirms the transaction's commit LSN at its next status update.
func (s *Source) Ack(_ context.Context, pos sdk.Position) error {
	defer s.acked.Add(1)
	if bytes.HasPrefix(pos, snapshotPrefix) {
		return nil
	}
	lsn, err := positionLSN(pos)
	if err != nil {
		return err
	}
	s.backlog.acked(lsn)
	raise(&s.confirmed, s.capped(uint64(lsn)))
	return nil
}

// raise sets v to n if n is greater.
func raise(v *atomic.Uint64, n uint64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}

// Teardown stops reading and closes the connections. The slot and the
// publication stay, for the next Open.
func (s *Source) Teardown(ctx context.Context) error {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	if s.lagDone != nil {
		<-s.lagDone
	}
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
	if err := s.forgetFirstSnapshot(ctx, conn); err != nil {
		return errors.New(pg.Redact(err, s.cfg.URL))
	}
	return nil
}
