package destination

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/internal/quietconn"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Config is the destination's configuration.
type Config struct {
	URL   string   `param:"url" validate:"required" desc:"PostgreSQL connection URL, e.g. postgres://user:password@host:5432/db. The password never appears in logs or errors."`
	Table string   `param:"table" desc:"Table to write to, optionally schema-qualified (schema.table); names are used as written, case included (double quotes allow dots). Default: each record's opencdc.collection metadata. A Go template over the record names each record's table, e.g. {{ index .Metadata \"opencdc.collection\" }}, with sprig's lower, upper, trim, trimPrefix, trimSuffix, replace and default."`
	Key   []string `param:"key" desc:"Comma-separated key columns. Default: the fields of each record's key. With one key column, a raw key that is not a JSON object is that column's value."`

	Auto struct {
		Create bool `param:"create" default:"true" desc:"Create a table a record names that does not exist: its columns, types, defaults, NOT NULL and primary key as the record's postgres.columns metadata gives them, after the enums, domains and composite types its postgres.types describes that the database lacks (the postgres source's records have both), else from the record's key and values (see the README)."`
		Evolve bool `param:"evolve" default:"true" desc:"Change a table before the first record that needs it: add a column it lacks, with its default (renaming one the postgres source saw renamed), create the user types the record's postgres.types describes that the database lacks, add the labels an enum lacks, and give a column the type the record's postgres.columns gives it when that widens it or the source changed it. Columns the records no longer have are left in place. Each change is logged with its statement."`
	} `param:"auto"`

	ExactlyOnce struct {
		Enabled bool   `param:"enabled" default:"false" desc:"Write each record once, also across restarts and crashes: the positions of the records written are kept in the destination database, in the same transaction as their rows, and a record whose position is there is acknowledged without being written again. Needs positions that are unique and the same when the source replays a record."`
		Table   string `param:"table" default:"connkit_positions" desc:"Table keeping the written positions, optionally schema-qualified; created when missing; one per database serves every connector."`
		Window  int    `param:"window" default:"100000" validate:"gt=0" desc:"Positions kept per connector: more than Conduit may replay after a crash (what it acknowledges in about a second, plus what is in flight)."`
	} `param:"exactlyOnce"`

	Reconnect pg.ReconnectSettings `param:"reconnect"`
}

// Destination writes records to PostgreSQL. Its Writes may run
// concurrently (see [Destination.WriteSplit]): what they share is the
// settings, the pool and the metrics, set in New and Open and read-only
// after, and the caches and counters below, each safe for concurrent use
// as its comment says.
type Destination struct {
	cfg     Config
	tableOf func(sdk.Record) (string, error) // names a record's table (the table parameter)
	keys    []string                         // the configured key columns, sorted
	pool    *pgxpool.Pool
	written *written // the positions written, in the exactly-once mode; else nil
	metrics destinationMetrics
	outage  pg.Outage // a lost connection that Writes are waiting out

	// schema orders the changes the destination makes to tables
	// (auto.create, auto.evolve) against the Writes that plan records with
	// the tables' descriptions and write them: a Write holds it for
	// reading from planning records to writing them (other Writes go on
	// meanwhile), a change holds it for writing, so no statement is sent
	// with a description that a change has made stale, and changes are
	// made one at a time. changes counts the changes made, under it.
	schema  sync.RWMutex
	changes uint64

	batches     atomic.Uint64            // counts the batches planned, so that a table is read again at most once per batch
	lastColumns lastDecoded[[]pg.Column] // the postgres.columns last decoded
	lastTypes   lastDecoded[[]pg.Type]   // the postgres.types last decoded
	typesFit    sync.Map                 // the postgres.types values found to need no change of the database's types

	mu       sync.Mutex
	tables   map[string]*table            // by name as configured or given in metadata; guarded by mu
	declared map[string]map[string]string // by table name, each column's type as the records last gave it; guarded by mu
	history  map[string]*columnHistory    // by table name; guarded by mu
}

// New returns a destination; it connects in Open.
func New(cfg Config) (*Destination, error) {
	if _, err := pgxpool.ParseConfig(cfg.URL); err != nil {
		return nil, fmt.Errorf(`parameter "url": %s`, pg.Redact(err, cfg.URL))
	}
	tableOf, err := tableNamer(cfg.Table)
	if err != nil {
		return nil, err
	}
	return &Destination{cfg: cfg, tableOf: tableOf, keys: slices.Sorted(slices.Values(cfg.Key)), tables: map[string]*table{}, declared: map[string]map[string]string{}, history: map[string]*columnHistory{}}, nil
}

// poolSize is how many connections the destination opens at most unless
// its URL sets pool_max_conns: one for each Write the SDK keeps in flight
// with sdk.write.concurrency auto, whose ceiling is 32, so that the Writes
// it starts run rather than queue for a connection. pgxpool's default,
// max(4, NumCPU), counts the client's cores, which say nothing of what the
// server takes. Connections are opened only as Writes need them (and
// closed after pgxpool's pool_max_conn_idle_time, 30 minutes idle). A
// server that takes fewer refuses the rest (too many connections, SQLSTATE
// 53300), which is retryable, and a Write that waits for a connection takes
// longer: the SDK's adaptive concurrency backs off from both. A parameter
// of the connector's own would do nothing that pool_max_conns in the URL
// does not.
const poolSize = 32

// applicationName is the application_name the destination gives its
// connections unless the URL sets one (in its query or key/value string,
// or PGAPPNAME in the environment): pg_stat_activity then tells them from
// other clients' (the source's replication connection is
// connkit-postgres-source), and counting them there shows how many the
// pool holds: as a Write uses one connection at a time and the pool keeps
// them idle for 30 minutes, no more than the most Writes that were in
// flight together.
const applicationName = "connkit-postgres-destination"

// Open connects to the database.
func (d *Destination) Open(ctx context.Context) error {
	d.metrics = newDestinationMetrics(ctx)
	pcfg, err := pgxpool.ParseConfig(d.cfg.URL)
	if err != nil {
		return fmt.Errorf(`parameter "url": %s`, pg.Redact(err, d.cfg.URL))
	}
	if !strings.Contains(d.cfg.URL, "pool_max_conns") {
		pcfg.MaxConns = poolSize
	}
	if _, ok := pcfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		pcfg.ConnConfig.RuntimeParams["application_name"] = applicationName
	}
	pcfg.ConnConfig.DialFunc = quietDial(pcfg.ConnConfig.DialFunc)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %s", pg.Reason(err, d.cfg.URL))
	}
	// A database that is starting, or restarting, is waited for.
	if err := pg.WaitForServer(ctx, d.cfg.Reconnect.Timeout, d.cfg.URL, "destination", func() error { return pool.Ping(ctx) }); err != nil {
		pool.Close()
		return fmt.Errorf("connect to PostgreSQL: %s", pg.Reason(err, d.cfg.URL))
	}
	if d.cfg.ExactlyOnce.Enabled {
		if d.written, err = newWritten(ctx, pool, d.cfg.ExactlyOnce.Table, d.cfg.ExactlyOnce.Window); err != nil {
			pool.Close()
			return err
		}
	}
	d.pool = pool
	return nil
}

// quietDial is dial with quiet reads and writes (see package quietconn):
// a Write of one record waits for the server once, and the first read
// after that wait would otherwise wake the runtime's monitor thread.
func quietDial(dial pgconn.DialFunc) pgconn.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return quietconn.Wrap(c), nil
	}
}

// Teardown closes the connections.
func (d *Destination) Teardown(context.Context) error {
	if d.pool != nil {
		d.pool.Close()
	}
	return nil
}

// Write writes records in order, one statement per run of records with the
// same table and operation. On failure it returns how many leading records
// are committed and an error naming the first record that is not, its table
// and the database's reason. The error says whose failure it is: a record
// the database rejects for its data (SQLSTATE classes 22 and 23: a value
// that does not fit its column, a constraint) is that record's fault
// ([sdk.RecordFault]), and the records after it go to the next Write; a
// failure of the system (the connection, a shutdown, a deadlock) is
// [sdk.Retryable] from the first record not written. In the exactly-once
// mode, records already written are counted without being written again.
//
// A lost connection is waited out up to reconnect.timeout (see
// [Destination.writeReconnecting]).
//
// Write is safe to call while other Writes run, on other records (see
// [Destination.WriteSplit]).
func (d *Destination) Write(ctx context.Context, records []sdk.Record) (int, error) {
	return d.writeReconnecting(ctx, records)
}

// write writes records, as Write describes, changing a table first where
// a record needs it (auto.create, auto.evolve): the records before that
// one are written with the table as it was. If another Write changed a
// table in the meantime, the record is planned again, which finds
// whether the change is still to make.
func (d *Destination) write(ctx context.Context, records []sdk.Record) (int, error) {
	done, changedAt := 0, -1
	var madeAt []string // the changes made for the record at changedAt: its types, then its table
	for {
		n, change, err := d.writePlanned(ctx, records[done:])
		done += n
		if change == nil {
			return done, err
		}
		at := records[done].Position
		stmts := strings.Join(change.stmts, "; ")
		if changedAt == done && slices.Contains(madeAt, stmts) {
			return done, fmt.Errorf("record at position %q: table %s still needs a change after it was made: %s", at, change.table, stmts)
		}
		made, err := d.apply(ctx, change)
		if err != nil {
			return done, markLike(err, fmt.Errorf("record at position %q: %w", at, err))
		}
		if made {
			if changedAt != done {
				madeAt = madeAt[:0]
			}
			changedAt, madeAt = done, append(madeAt, stmts)
		}
	}
}

// writePlanned plans records with the tables as they are and writes the
// runs planned, holding d.schema for reading throughout, so that no
// change of a table comes between the two. It returns how many records it
// wrote and, if the next needs a change of its table first, the change;
// else the error that stopped it, if any.
func (d *Destination) writePlanned(ctx context.Context, records []sdk.Record) (int, *schemaChange, error) {
	d.schema.RLock()
	defer d.schema.RUnlock()
	runs, n, change, err := d.plan(ctx, records)
	for _, r := range runs {
		if werr := d.writeRun(ctx, r); werr != nil {
			return r.start + werr.index, nil, werr.err
		}
	}
	if change != nil {
		change.after = d.changes
	}
	return n, change, err
}

// WriteSplit says that the SDK may keep several Writes in flight, each on
// a connection of its own, and hand them records in lanes by key
// ([sdk.SplitByKey]): a record goes to a Write only once every earlier
// record with its key is settled. The upserts and deletes of one key must
// commit in their order, or a row ends as an older record left it (an
// update overwritten by the one before it, a row deleted before its
// create); records of different keys touch different rows, and may commit
// in any order. Keyless records share their table's lane: plain inserts
// may commit in any order, and an update or delete without a key, which
// finds its row by its old values (keyless.go), waits for the table's
// earlier keyless records, and later ones for it.
//
// The lanes follow the records' keys. With the key parameter naming
// columns the records' keys do not hold, two records of one row may reach
// Writes in flight together: set sdk.write.concurrency to 1 then.
func (d *Destination) WriteSplit() sdk.Split { return sdk.SplitByKey }

var _ sdk.ConcurrentDestination = (*Destination)(nil)
