package source

import (
	"fmt"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/jackc/pgx/v5"
)

// Config is the source's configuration.
type Config struct {
	URL      string   `param:"url" validate:"required" desc:"PostgreSQL connection URL, e.g. postgres://user:password@host:5432/db; the role needs the REPLICATION attribute. The password never appears in logs or errors."`
	Tables   []string `param:"tables" validate:"required" desc:"Comma-separated tables to read, each table or schema.table; * for every table in public, schema.* for every table in schema (snapshot.stateTable, and the partitions of the partitioned tables taken, left out). A partitioned table named by its parent is read whole, under the parent's name. Each table needs a primary key, REPLICA IDENTITY USING INDEX (records keyed by that index) or REPLICA IDENTITY FULL (without a primary key: records with no key, updates and deletes with the whole old row); others are refused with the ALTER TABLE to run."`
	Snapshot struct {
		Mode        string `param:"mode" default:"initial" validate:"inclusion=initial|never|initial_only|when_needed|always" desc:"initial: read the tables' rows in chunks while their changes stream from the start; never: stream changes only; initial_only: copy the rows in chunks, each as it is when read, then read no changes and stay idle (no slot is kept); when_needed: as initial, and when the replication slot of Conduit's position is missing or invalidated (e.g. past max_slot_wal_keep_size), create a new slot and read every table again; always: a new slot and a new snapshot at every start."`
		FetchSize   int    `param:"fetchSize" default:"10000" validate:"gt=0" desc:"Rows a chunk of the snapshot reads, each chunk in a transaction of its own: what the source holds ahead of Conduit while it snapshots."`
		Parallelism int    `param:"parallelism" default:"1" validate:"gt=0" desc:"Chunks read at once, each on a connection of its own."`
		StateTable  string `param:"stateTable" default:"connkit_snapshots" desc:"Table (table or schema.table, created when missing) where the source records, per slot, where the snapshot's read of each table stands, so that a restart goes on from there, and which tables it has read, so that a table added to tables later is read while changes stream. The role must be able to write it."`
	} `param:"snapshot"`
	Slot struct {
		Name string `param:"name" default:"connkit" validate:"regex=^[a-z0-9_]{1,63}$" desc:"Logical replication slot, created when missing (one reader at a time): lower-case letters, digits and underscores, at most 63."`
	} `param:"slot"`
	Publication struct {
		Name string `param:"name" default:"connkit" validate:"regex=^[a-z0-9_]{1,63}$" desc:"Publication of the tables, created when missing (tables it lacks are added): lower-case letters, digits and underscores, at most 63."`
	} `param:"publication"`
	Signal struct {
		Table string `param:"table" desc:"Table (table or schema.table) whose inserted rows are signals, as Debezium's signal table: columns id (text, primary key), type and data (text), created when missing and added to the publication; its rows never become records. Type execute-snapshot with data {\"data-collections\": [\"public.t\"]} reads those tables of tables again in chunks while changes stream, resumed after a restart; stop-snapshot ends such a read (every table when data-collections is absent). Needs snapshot.mode initial and a snapshot.stateTable the role may write. Empty: no signals."`
	} `param:"signal"`
	Cleanup   bool                 `param:"cleanup" default:"true" desc:"Drop the replication slot and the publication, and delete the slot's row of snapshot.stateTable, when the connector is deleted."`
	Reconnect pg.ReconnectSettings `param:"reconnect"`
}

// stateTable returns the table's name, quoted.
func stateTable(name string) (string, error) {
	parts, err := pg.SplitName(name)
	if err != nil {
		return "", fmt.Errorf(`parameter "snapshot.stateTable": %w`, err)
	}
	return pgx.Identifier(parts).Sanitize(), nil
}
