package source

import (
	"context"

	"github.com/jackc/pglogrepl"
)

// exportedSnapshot is a snapshot exported by a temporary replication
// slot: which transactions it sees, and the slot's consistent point, from
// which on the changes it does not see commit.
type exportedSnapshot struct {
	view       string // txid_snapshot's text
	txs        txSnapshot
	consistent pglogrepl.LSN
}

// exportSnapshot creates the temporary replication slot tmp, which
// exports a snapshot, imports the snapshot into a transaction begun on the
// query connection, and drops the slot, which would keep WAL: the
// imported snapshot outlives it. The transaction is left open, to read
// under the snapshot. purpose says, in an error, what the snapshot is for.
//
// A resumed snapshot reads the rest of the tables under one (resume.go);
// the added tables' chunks leave out the row versions one did not see
// (added.go).
func (s *Source) exportSnapshot(ctx context.Context, tmp, purpose string) (exportedSnapshot, error) {
	created, err := pglogrepl.CreateReplicationSlot(ctx, s.repl, tmp, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, Temporary: true, SnapshotAction: "EXPORT_SNAPSHOT"})
	if err != nil {
		return exportedSnapshot{}, s.errorf("create a temporary replication slot to "+purpose+": %s", err)
	}
	if err := s.beginSnapshot(ctx, created.SnapshotName); err != nil {
		return exportedSnapshot{}, err
	}
	txs, view, err := s.snapshotView(ctx)
	if err != nil {
		return exportedSnapshot{}, err
	}
	if err := pglogrepl.DropReplicationSlot(ctx, s.repl, tmp, pglogrepl.DropReplicationSlotOptions{}); err != nil {
		return exportedSnapshot{}, s.errorf("drop the temporary replication slot: %s", err)
	}
	consistent, _ := pglogrepl.ParseLSN(created.ConsistentPoint)
	return exportedSnapshot{view: view, txs: txs, consistent: consistent}, nil
}

// tempSlotName names a temporary slot of the slot's: the slot's name with
// suffix, within PostgreSQL's 63 bytes. The advisory lock on the slot's
// name keeps it to one source at a time.
func tempSlotName(slot, suffix string) string {
	return slot[:min(len(slot), 63-len(suffix))] + suffix
}
