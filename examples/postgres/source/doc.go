// Package source is the postgres connector's source. It streams its
// tables' changes through logical replication with the built-in pgoutput
// plugin, from the first second, and reads their rows in chunks between
// those changes: inserts, updates and deletes become create, update and
// delete records, rows snapshot records, keyed by the primary key (or the
// replica identity index; a table with REPLICA IDENTITY FULL and no
// primary key is read by ctid, its records have no key), with
// opencdc.collection set to the table's name (schema.name outside
// public), which is also the table the destination writes them to.
//
// The files go by concept:
//
//   - source.go, start.go: the connector, and where a start reads from;
//   - engine*.go: the snapshot engine, which reads every snapshot (the
//     first copy, tables added to tables, signals, a lost slot) in chunks
//     between watermarks, and keeps where its reads stand in
//     snapshot.stateTable;
//   - stream*.go: the replication stream and the records of its changes;
//   - signal.go: Debezium's signal table;
//   - slot*.go: the replication slot and the publication;
//   - catalog*.go: the tables read, their columns, types and values;
//   - position.go, queue.go, acks.go: what a record's position says, how
//     records reach ReadBatch, and what Conduit has acknowledged.
//
// # The snapshot
//
// A chunk is the next snapshot.fetchSize rows of a table in key order (a
// keyless table's: a range of blocks), read in a short transaction of its
// own, between a low and a high watermark written to the WAL
// (pg_logical_emit_message), as Netflix's DBLog does: no table lock, no
// long transaction, and changes interleaved. A change in a chunk's window
// that the chunk's transaction did not see takes its row out of the chunk
// (a keyless table's by its old row, as a multiset); the chunk's other
// rows are emitted at the high watermark, among the changes, so a
// snapshot record never overwrites a later change of its row. Each row
// version comes once: a version written after the read began streams,
// and the chunks leave it out. snapshot.parallelism chunks are read at
// once, each on a connection of its own.
//
// Positions say where the source is: a change's names its transaction,
// by its commit LSN, and its index within it; a chunk row's names its
// table, key (or ctid), row version (xmin) and its chunk's high
// watermark's commit LSN. The slot is not confirmed past the low
// watermark of a chunk whose rows are not all acknowledged, so a restart
// streams from before it again and reads its range once more, keeping
// the versions it read then: the same records under the same positions,
// which an exactly-once destination skips. Acknowledged changes are
// confirmed to the server, which may then recycle their WAL.
//
// snapshot.mode initial_only has no changes to stream: it copies in
// chunks without watermarks or a slot, each as its rows are when read.
//
// # Signals
//
// With signal.table set, rows inserted into that table (Debezium's
// columns id, type, data; created when missing, added to the publication,
// never records) are signals, applied when their commit streams
// (signal.go): execute-snapshot reads the tables it names again,
// stop-snapshot ends such a read. The state row keeps each table's read
// and the commit LSN of the last signal applied to it, so a restart goes
// on with a read and never applies a signal twice.
//
// # Lost connections
//
// The source waits out a database that goes away for a while (a restart,
// a crash, a network failure) instead of failing the pipeline, up to
// reconnect.timeout, trying again after waits of 100ms doubling up to 2s;
// Open waits for a database that is starting. Streaming changes, it
// reconnects and starts replication again from the LSN it has confirmed,
// skipping the changes up to the last one it handed out, which the server
// sends again: none is lost, none comes twice. While a snapshot is read,
// it fails instead, and the restarted source goes on with the snapshot.
//
// # Columns and types
//
// Every record describes its table's columns in postgres.columns (their
// types, NOT NULL, key and the defaults a destination can take, see
// carriedDefault) and, when they use enums, domains or composite types,
// those types in postgres.types (catalog_usertypes.go): as the catalog had
// them at Open for snapshot records, and when a Relation message arrives
// for changes. Labels added to an enum reach logical replication as
// nothing: a row holding a label the types lack makes the source read them
// again, and that row's record carries the new labels.
//
// # Metrics
//
// Besides what the SDK measures of every source (sdk.metrics.*), the
// source serves its snapshot's progress, per table (schema.name): rows
// read (connkit_postgres_snapshot_rows_total) and expected (the planner's
// estimate until the table is read, connkit_postgres_snapshot_rows_estimate),
// the whole snapshot's ratio, the tables left and the chunks in flight;
// and its replication lag, sampled every second on a connection of its
// own: in bytes, the server's WAL end less the slot's confirmed LSN (or
// the first LSN of the oldest transaction not all acknowledged, if
// earlier), in seconds, how long ago the last change read committed (0
// while all is acknowledged), and the slot's confirmed LSN.
package source
