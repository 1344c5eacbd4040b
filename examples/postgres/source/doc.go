// Package source is the postgres connector's source. It reads a consistent snapshot of its tables (under the snapshot
// its replication slot exports, in key order, in batches), then
// streams their changes through logical replication with the built-in
// pgoutput plugin: inserts, updates and deletes become create, update and
// delete records, keyed by the primary key (or the replica identity index;
// a table with REPLICA IDENTITY FULL and no primary key is read in ctid
// order, its records have no key, see keyless.go), with opencdc.collection set to
// the table's name (schema.name outside public), which is also the table
// the destination writes them to. Positions say where the source is (table
// and key during the snapshot, transaction and change afterwards), so a
// restart resumes right after the last acknowledged record; acknowledged
// changes are confirmed to the server, which may then recycle their WAL.
//
// # Resumed snapshot
//
// A restart from a position of the snapshot reads the rest of it under a
// fresh snapshot, exported by a temporary replication slot, while
// replication starts where the first snapshot ended. The fresh snapshot
// reads only the row versions the first snapshot saw (which transactions
// it saw is kept in a table of the source database, and every snapshot
// position names its row's version): the rows unchanged since, under the
// positions the first snapshot gave them. A row written since comes from
// replication, which streams its change under the position it always has. So the records of a run
// restarted anywhere are the records of a run without a restart, by
// position: an exactly-once destination writes each once. A row changed
// before the restart, after the resume point, comes as its changes alone
// (its first snapshot record is gone with the first snapshot); the first
// update of such a row before the fresh snapshot carries the TOASTed
// values it left unchanged, read from the table.
//
// # Signals
//
// With signal.table set, rows inserted into that table (Debezium's
// columns id, type, data; created when missing, added to the publication,
// never records) are signals, applied when their commit streams
// (signal.go): execute-snapshot reads the tables it names again the way
// added tables are read, stop-snapshot ends such a read (reread.go). The
// state row keeps each table's read and the commit LSN of the last signal
// applied to it, so a restart goes on with a read and never applies a
// signal twice.
//
// # Tables added while streaming
//
// A table added to tables of a source that streams (restarted from a
// change's position, with snapshot.mode initial) is snapshotted while the
// changes of every table keep streaming, without a table lock, with
// watermarks as in DBLog (added.go). The source knows a table is new
// because the slot's row of snapshot.stateTable does not list it (a row
// from before the list counts the publication's tables); the table is
// added to the publication, so its changes stream from then on. It is read
// in chunks of snapshot.fetchSize rows in key order, each between a low and
// a high watermark (transactional pg_logical_emit_message messages, which
// pgoutput delivers with its messages option): a change to a key of the
// chunk between them removes the key from the chunk, and the chunk's other
// rows come as snapshot records at the high watermark, among the changes.
// Row versions whose changes stream (written after the table was added,
// as a snapshot exported then tells) are left out of every chunk, so no
// row comes twice. A chunk row's position names its table, key and version
// and the high watermark's commit LSN. The slot is not confirmed past the
// low watermark of a chunk whose rows are not all acknowledged, so a
// restart streams from before it, sees its watermarks and window again and
// reads its range again, keeping the versions it read then: the same
// records, under the same positions. The other tables are not read again.
//
// # Lost connections
//
// The source waits out a database that goes away for a while (a restart,
// a crash, a network failure) instead of failing the pipeline, up to
// reconnect.timeout, trying again after waits of 100ms doubling up to 2s;
// Open waits for a database that is starting. Streaming changes, it
// reconnects and starts replication again from the LSN it has confirmed,
// skipping the changes up to the last one it handed out, which the server
// sends again: none is lost, none comes twice. During the snapshot, the
// first or that of tables added to tables (until the source restarts
// after it), it fails as before, and the restarted source resumes the
// snapshot.
//
// # Columns and types
//
// Every record describes its table's columns in postgres.columns (their
// types, NOT NULL, key and the defaults a destination can take, see
// carriedDefault) and, when they use enums, domains or composite types,
// those types in postgres.types (usertypes.go): as the catalog had them
// at Open for the snapshot, and when a Relation message arrives for
// changes. Labels added to an enum reach logical replication as nothing:
// a row holding a label the types lack makes the source read them again,
// and that row's record carries the new labels.
//
// # Metrics
//
// Besides what the SDK measures of every source (sdk.metrics.*), the
// source serves its snapshot's progress, per table (schema.name): rows
// read (connkit_postgres_snapshot_rows_total) and expected (the planner's
// estimate until the table is read, connkit_postgres_snapshot_rows_estimate),
// the whole snapshot's ratio and the tables left (of an added table's
// snapshot too, which counts that table alone); and its replication
// lag, sampled every second on a connection of its own: in bytes, the
// server's WAL end less the slot's confirmed LSN (or the first LSN of the
// oldest transaction not all acknowledged, if earlier), in seconds, how
// long ago the last change read committed (0 while all is acknowledged),
// and the slot's confirmed LSN.
package source
