// Package destination is the postgres connector's destination. It writes records to PostgreSQL with set-based statements:
// each run of consecutive records for the same table and operation becomes
// one statement over arrays of values or, from 100 rows on, a COPY (into
// the table for plain inserts, else into a staging table the statement
// reads).
//
// # Tables without a key
//
// An update or delete with no key and the whole old row in
// payload.before (a table with REPLICA IDENTITY FULL at the source)
// changes one row equal to the old row, as PostgreSQL's logical
// replication applies it: a statement per record, a run of them sent in
// one round trip and one transaction (keyless.go). One whose row is not
// there is logged, counted and acknowledged: an update inserts its new
// row, a delete changes nothing.
//
// # Tables created and evolved
//
// With auto.create and auto.evolve (both on by default), a table a record
// names is created when missing, and changed before the first record that
// needs it: columns, types, defaults, NOT NULL and primary key as the
// record's postgres.columns metadata gives them (the source's records
// carry it), else as its values' types map to PostgreSQL's (ddl.go). A
// column the source adds is added with its default, one it renames
// renamed, one whose type it widens or changes retyped; one it drops is
// left in place. The enums, domains and composite types the record's
// postgres.types describes are created first where missing, and an
// enum's missing labels added (usertypes.go).
//
// # Concurrent Writes
//
// The destination is an [sdk.ConcurrentDestination]: the SDK may keep
// several Writes in flight, with records in lanes by key. The changes of
// tables are made one at a time, while no Write is between planning its
// records with a table's description and writing them; a Write whose
// records need a change another Write made goes on without making it
// (history.go keeps an older record of another lane from undoing it). In
// the exactly-once mode each Write's rows still commit with their
// positions (written.go).
//
// # Exactly once
//
// By default a record may be written twice after a crash (at least once).
// With exactlyOnce.enabled, each statement is sent in one transaction with
// the positions of the records it writes, which go to a table in the same
// database under the connector's ID (Conduit's pipeline:connector). A
// record whose position is there is acknowledged without being written, so
// a record is skipped only when the database proves it written. Positions
// are opaque bytes: the destination never orders them, and a replay may
// start anywhere within the newest exactlyOnce.window positions, which is
// what the table keeps per connector. A replay that starts further back,
// or a source that does not give a replayed record its earlier position,
// writes the record again.
//
// # Lost connections
//
// The destination waits out a database that goes away for a while (a
// restart, a crash, a network failure) instead of failing the pipeline,
// up to reconnect.timeout, trying again after waits of 100ms doubling up
// to 2s; Open waits for a database that is starting. A Write that meets a
// lost connection writes the rest of its records again on fresh
// connections; in the exactly-once mode it first settles whether a
// statement whose connection broke committed.
//
// # Metrics
//
// Besides what the SDK measures of every destination (sdk.metrics.*), the
// destination serves the rows it wrote by operation (insert, upsert,
// update, delete), the keyless changes whose row was not found, the statements that wrote them by method (copy, statement), and
// the records an exactly-once destination skipped as written before.
package destination
