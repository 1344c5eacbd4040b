// Package source is the postgres connector's source. It reads a consistent snapshot of its tables (under the snapshot
// its replication slot exports, in primary key order, in batches), then
// streams their changes through logical replication with the built-in
// pgoutput plugin: inserts, updates and deletes become create, update and
// delete records, keyed by the primary key, with opencdc.collection set to
// the table's name (schema.name outside public), which is also the table
// the destination writes them to. Positions say where the source is (table
// and key during the snapshot, transaction and change afterwards), so a
// restart resumes right after the last acknowledged record; acknowledged
// changes are confirmed to the server, which may then recycle their WAL.//
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
// the whole snapshot's ratio and the tables left; and its replication
// lag, sampled every second on a connection of its own: in bytes, the
// server's WAL end less the slot's confirmed LSN (or the first LSN of the
// oldest transaction not all acknowledged, if earlier), in seconds, how
// long ago the last change read committed (0 while all is acknowledged),
// and the slot's confirmed LSN.
package source
