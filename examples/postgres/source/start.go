package source

import (
	"context"
	"fmt"
	"math"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
)

// start sets what the source reads first, in the way that fits where it
// starts from: nowhere (the first snapshot, or with snapshot.mode never the
// changes alone), a position of the snapshot (the snapshot resumed), or a
// change's position (the changes after it); a position whose slot is gone
// fails, or with snapshot.mode when_needed starts again (lostslot.go), and
// snapshot.mode always starts over every time. Each way is a method of its
// own, which leaves s.snap, s.resume, s.adder and s.from as the reader's
// goroutine starts from them.
func (s *Source) start(ctx context.Context, from sdk.Position, pos position, slot slotInfo) error {
	mode := s.cfg.Snapshot.Mode
	switch {
	case from == nil && mode == "never":
		return s.startStreaming(ctx, slot)
	case from == nil:
		return s.startSnapshot(ctx, slot)
	case mode == "always":
		sdk.Logger(ctx).Info("postgres: snapshot.mode is always: starting over with a new snapshot from a new slot")
		if err := s.dropSlot(ctx, slot, "drop the replication slot to start over"); err != nil {
			return err
		}
		return s.startSnapshot(ctx, slotInfo{})
	case mode == "initial_only" && pos.snapshot():
		return s.resumeSnapshot(ctx, pos)
	case slot.gone() && mode == "when_needed":
		return s.recoverSlot(ctx, pos, slot)
	case slot.gone():
		return s.slotGone(from, slot)
	case pos.snapshot():
		return s.resumeSnapshot(ctx, pos)
	default:
		return s.resumeStreaming(ctx, pos, slot)
	}
}

// startSnapshot starts over, since nothing was acked: from a slot created
// now, reading the tables as they were at the slot's consistent point,
// then streaming their changes from there.
func (s *Source) startSnapshot(ctx context.Context, slot slotInfo) error {
	if err := s.dropSlotIfExists(ctx, slot); err != nil {
		return err
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
	if s.cfg.Snapshot.Mode == "initial_only" {
		if err := s.releaseSlotForSnapshot(ctx); err != nil {
			return err
		}
	}
	_, view, err := s.snapshotView(ctx)
	if err != nil {
		return err
	}
	if err := s.saveFirstSnapshot(ctx, view); err != nil {
		return err
	}
	if err := s.saveTablesCovered(ctx); err != nil {
		return err
	}
	s.snap = &snapshotFrom{}
	return nil
}

// startStreaming streams the changes alone (snapshot.mode never), from
// where the slot is, creating it when missing.
func (s *Source) startStreaming(ctx context.Context, slot slotInfo) error {
	if slot.exists && !slot.gone() {
		return nil
	}
	if err := s.dropSlot(ctx, slot, "drop the invalidated replication slot"); err != nil {
		return err
	}
	_, err := s.createSlot(ctx, "NOEXPORT_SNAPSHOT")
	return err
}

// resumeSnapshot reads the rest of the tables after pos. The slot's own
// snapshot is gone with the connection that created it: the rest is read
// under a fresh one, exported by a temporary slot, keeping the row
// versions the first one saw. Replication still starts at the slot's
// consistent point (resume.go).
func (s *Source) resumeSnapshot(ctx context.Context, pos position) error {
	if err := s.resumable(pos); err != nil {
		return err
	}
	first, ok, err := s.loadFirstSnapshot(ctx)
	if err != nil {
		return err
	}
	if s.cfg.Snapshot.Mode == "initial_only" {
		// No change streams: every row is read as it is now.
		first, ok = txSnapshot{xmax: math.MaxUint64}, true
	}
	if !ok {
		sdk.Logger(ctx).Warn(fmt.Sprintf(`postgres: no record of slot %s's snapshot in %s (parameter "snapshot.stateTable"): the resumed snapshot reads every row, and delivers the rows changed since the snapshot began again, under new positions`, s.cfg.Slot.Name, s.cfg.Snapshot.StateTable))
		first = txSnapshot{xmax: math.MaxUint64} // every version seen
	}
	fresh, err := s.exportSnapshot(ctx, tempSlotName(s.cfg.Slot.Name, "_resume"), "resume the snapshot")
	if err != nil {
		return err
	}
	s.resume = &resumed{table: pos.Table, key: pos.Key, until: fresh.consistent, first: first, horizon: fresh.txs.xmax, changed: map[string]bool{}}
	since := "rows written since the first snapshot come as changes"
	if s.cfg.Snapshot.Mode == "initial_only" {
		since = "rows written since the first snapshot are read as they are now"
	}
	sdk.Logger(ctx).Info(fmt.Sprintf("postgres: resuming the snapshot after %s key %v under a fresh snapshot; %s", pos.Table, pos.after(), since), "table", pos.Table)
	s.snap = s.snapshotAfter(pos)
	return nil
}

// resumeStreaming streams the changes after the one at pos, and snapshots
// the tables added since the slot's snapshots while they stream (added.go).
func (s *Source) resumeStreaming(ctx context.Context, pos position, slot slotInfo) error {
	s.from.lsn, s.from.skip = pos.lsn(), pos
	if err := s.startAdding(ctx, slot.confirmed); err != nil {
		return err
	}
	if uint64(s.from.lsn) > s.acks.confirmed.Load() {
		s.acks.confirmed.Store(uint64(s.from.lsn))
	}
	return nil
}

// snapshotAfter is where the snapshot resumes after pos: at its table,
// after its key, or, if the table is no longer read, at the next table
// that is.
func (s *Source) snapshotAfter(pos position) *snapshotFrom {
	for i, t := range s.catalog.tables {
		if t.ident == pos.Table {
			return &snapshotFrom{table: i, key: pos.after()}
		}
		if t.ident > pos.Table {
			return &snapshotFrom{table: i}
		}
	}
	return &snapshotFrom{table: len(s.catalog.tables)}
}

// createSlot creates the replication slot, exporting a snapshot or not as
// snapshotAction (EXPORT_SNAPSHOT, NOEXPORT_SNAPSHOT) says, and confirms
// its consistent point. It returns the exported snapshot's name.
func (s *Source) createSlot(ctx context.Context, snapshotAction string) (string, error) {
	created, err := pglogrepl.CreateReplicationSlot(ctx, s.repl, s.cfg.Slot.Name, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: snapshotAction})
	if err != nil {
		return "", s.errorf("create replication slot: %s", err)
	}
	lsn, _ := pglogrepl.ParseLSN(created.ConsistentPoint)
	s.acks.confirmed.Store(uint64(lsn))
	return created.SnapshotName, nil
}

// dropSlotIfExists drops the replication slot, to start over, if it
// exists. Conduit gave no position, yet the slot is there: the pipeline is
// new to Conduit (its position was reset), or Conduit was killed before it
// stored one. What was delivered before comes again, the rows streamed as
// changes under new positions, which an exactly-once destination cannot
// skip: it says so.
func (s *Source) dropSlotIfExists(ctx context.Context, slot slotInfo) error {
	if !slot.exists {
		return nil
	}
	sdk.Logger(ctx).Info(fmt.Sprintf("postgres: Conduit gave no position, but replication slot %s exists: starting over with a new snapshot from a new slot; records delivered before come again", s.cfg.Slot.Name))
	if err := pglogrepl.DropReplicationSlot(ctx, s.repl, s.cfg.Slot.Name, pglogrepl.DropReplicationSlotOptions{}); err != nil {
		return s.errorf("drop the replication slot to start over: %s", err)
	}
	return nil
}
