package source

import (
	"context"
	"fmt"
	"strings"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
)

// start sets what the source reads first, in the way that fits where it
// starts from: nowhere (a snapshot of every table from a new slot, or with
// snapshot.mode never the changes alone), or a position (the changes, and
// chunks, after it); a position whose slot is gone fails, or with
// snapshot.mode when_needed starts again, and snapshot.mode always starts
// over every time. initial_only copies without a slot. Each way is a
// method of its own, which leaves s.engine and s.from as the reading
// goroutine starts from them.
func (s *Source) start(ctx context.Context, from sdk.Position, pos position, slot slotInfo) error {
	mode := s.cfg.Snapshot.Mode
	switch {
	case mode == "initial_only":
		return s.startCopying(ctx, from, pos, slot)
	case from == nil && mode == "never":
		return s.startStreaming(ctx, slot)
	case from == nil && slot.exists:
		// The pipeline is new to Conduit (its position was reset), or
		// Conduit was killed before it stored one: what was delivered
		// before comes again, the rows streamed as changes under new
		// positions, which an exactly-once destination cannot skip.
		return s.startSnapshot(ctx, slot, fmt.Sprintf("Conduit gave no position, but replication slot %s exists: starting over with a new snapshot from a new slot; records delivered before come again", s.cfg.Slot.Name))
	case from == nil:
		return s.startSnapshot(ctx, slot, "")
	case mode == "always":
		return s.startSnapshot(ctx, slot, "snapshot.mode is always: starting over with a new snapshot from a new slot")
	case slot.gone() && mode == "when_needed":
		return s.startSnapshot(ctx, slot, lostSlotNote(s.cfg.Slot.Name, slot))
	case slot.gone():
		return s.slotGone(from, slot)
	case pos.snapshot():
		return s.startSnapshot(ctx, slot, fmt.Sprintf("position %s is of a snapshot read in one transaction, as earlier versions read it: starting over with a new snapshot, read in chunks, from a new slot; records delivered before come again", from))
	default:
		return s.resumeStreaming(ctx, pos, slot)
	}
}

// startSnapshot snapshots every table while their changes stream, from a
// slot created now (the old one dropped), whose exported snapshot the
// chunks are read against; why, if not empty, is logged first.
func (s *Source) startSnapshot(ctx context.Context, slot slotInfo, why string) error {
	if why != "" {
		sdk.Logger(ctx).Info("postgres: " + why)
	}
	if err := s.dropSlot(ctx, slot, "drop the replication slot to start over"); err != nil {
		return err
	}
	exported, err := s.createSlotExporting(ctx)
	if err != nil {
		return err
	}
	state := s.everyTable(exported)
	if err := s.forgetSlot(ctx, s.conn); err != nil {
		return err
	}
	if err := s.saveTableStates(ctx, s.conn, state); err != nil {
		return err
	}
	s.engine, s.from = s.newEngine(state, true), streamFrom{}
	_, err = s.engine.begin(ctx, exported.consistent)
	return err
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

// resumeStreaming streams the changes after the one at pos, and goes on
// with the snapshot of the tables the state row has not read whole
// (planAddedTables found them).
func (s *Source) resumeStreaming(ctx context.Context, pos position, slot slotInfo) error {
	s.from.lsn, s.from.skip = pos.lsn(), pos
	if s.engine != nil {
		reading, err := s.engine.begin(ctx, slot.confirmed)
		if err != nil {
			return err
		}
		if reading {
			sdk.Logger(ctx).Info("postgres: going on with the snapshot after " + string(pos.bytes()) + ": chunks not all acknowledged are read again under the positions their rows had, then the next ones")
		}
		switch {
		case !reading && s.signals == nil:
			s.engine = nil
		case !reading:
			s.engine.listen() // for the signals
		}
	}
	if uint64(s.from.lsn) > s.acks.confirmed.Load() {
		s.acks.confirmed.Store(uint64(s.from.lsn))
	}
	return nil
}

// startCopying copies the tables without a slot or changes (snapshot.mode
// initial_only): from the start, or after the snapshot position pos. A
// position of a source that streamed has nothing left to copy.
func (s *Source) startCopying(ctx context.Context, from sdk.Position, pos position, slot slotInfo) error {
	if err := s.dropSlot(ctx, slot, "drop the replication slot (snapshot.mode initial_only keeps none)"); err != nil {
		return err
	}
	if from != nil && !pos.snapshot() {
		sdk.Logger(ctx).Info(fmt.Sprintf("postgres: snapshot.mode is initial_only and position %s is not of a copy: nothing is copied", from))
		s.engine = s.newEngine(map[string]tableState{}, false)
		return nil
	}
	if err := s.resumable(pos); err != nil {
		return err
	}
	state := map[string]tableState{}
	for _, t := range s.catalog.tables {
		switch {
		case from == nil || t.ident > pos.Table:
			state[t.ident] = tableState{}
		case t.ident == pos.Table:
			state[t.ident] = tableState{After: pos.after()}
		default:
			state[t.ident] = tableState{Done: true}
		}
	}
	if from != nil {
		sdk.Logger(ctx).Info(fmt.Sprintf("postgres: resuming the copy after %s key %v; rows are read as they are now", pos.Table, pos.after()), "table", pos.Table)
	}
	s.engine = s.newEngine(state, false)
	return nil
}

// planAddedTables finds, before the publication is changed, the tables a
// source restarted from a change's position has not snapshotted, and
// records them in the state row; the engine reads them, and the tables
// whose snapshot a restart interrupted, once the slot is known
// (resumeStreaming).
func (s *Source) planAddedTables(ctx context.Context, from sdk.Position, pos position) error {
	if mode := s.cfg.Snapshot.Mode; from == nil || pos.snapshot() || mode != "initial" && mode != "when_needed" {
		return nil
	}
	state, ok, err := s.loadTableStates(ctx)
	if err != nil {
		return err
	}
	if !ok {
		// A row written before the tables were recorded: the tables the
		// publication has are the ones the slot has seen.
		if state, err = s.publishedTables(ctx); err != nil {
			return err
		}
	}
	if changed := s.followTables(ctx, state); changed || !ok {
		if err := s.saveTableStates(ctx, s.conn, state); err != nil {
			return err
		}
	}
	s.engine = s.newEngine(state, true)
	return nil
}

// followTables adds to the state the tables read that it lacks, to be
// read, and forgets the tables no longer read: their changes are not read
// meanwhile, so if one comes back it is read again. It reports whether the
// state changed.
func (s *Source) followTables(ctx context.Context, state map[string]tableState) bool {
	changed := false
	read := map[string]bool{}
	for _, t := range s.catalog.tables {
		read[t.ident] = true
		if _, known := state[t.ident]; !known {
			state[t.ident] = tableState{}
			changed = true
			sdk.Logger(ctx).Info(fmt.Sprintf("postgres: table %s was added to parameter \"tables\": it is snapshotted in chunks while changes stream", t.ident), "table", t.ident)
		}
	}
	for ident := range state {
		if !read[ident] {
			delete(state, ident)
			changed = true
		}
	}
	return changed
}

// publishedTables is the state of a slot whose row does not list its
// tables: the tables read that the publication has, each done.
func (s *Source) publishedTables(ctx context.Context) (map[string]tableState, error) {
	state := map[string]tableState{}
	for _, t := range s.catalog.tables {
		var in bool
		if err := s.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication p WHERE p.pubname = $1 AND (p.puballtables OR EXISTS (SELECT 1 FROM pg_publication_rel r WHERE r.prpubid = p.oid AND r.prrelid = $2)))`, s.cfg.Publication.Name, t.oid).Scan(&in); err != nil {
			return nil, s.errorf("look up the publication's tables: %s", err)
		}
		if in {
			state[t.ident] = tableState{Done: true}
		}
	}
	return state, nil
}

// lostSlotNote says, with snapshot.mode when_needed, that the position's
// slot is gone and what the source does instead.
func lostSlotNote(name string, slot slotInfo) string {
	what := "does not exist"
	if slot.exists {
		what, _, _ = slot.health.invalidated()
		what = "was invalidated: " + what
	}
	return fmt.Sprintf("replication slot %s %s, so the changes since the pipeline's position are gone; snapshot.mode is when_needed: creating a new slot and taking a fresh snapshot of every table", name, what)
}

// resumable checks that the snapshot position pos names its row the way
// its table is read now: by ctid if the table is keyless, by key if not.
func (s *Source) resumable(pos position) error {
	for _, t := range s.catalog.tables {
		if t.ident == pos.Table && t.keyless() != (pos.CTID != "") {
			return identityChanged(t, pos.CTID != "")
		}
	}
	return nil
}

// identityChanged is the error for a table whose read began by ctid (or,
// if not byCTID, by key) and cannot go on the other way: a primary key
// added or dropped, or a replica identity changed, since the read began
// leaves no place in the table to resume at.
func identityChanged(t *sourceTable, byCTID bool) error {
	was, is := "key", "keyless (REPLICA IDENTITY FULL without a primary key)"
	if byCTID {
		was, is = "ctid", "keyed by "+strings.Join(t.keyNames(), ", ")
	}
	return fmt.Errorf("the snapshot cannot resume: it read table %s by its rows' %s, but the table is now %s (its primary key or replica identity changed since the read began); reset the pipeline's position (e.g. recreate the source connector) to read it again", pg.SQLName(t.schema, t.name), was, is)
}

// idleAfterSnapshot is what the source does once the copy is read with
// snapshot.mode initial_only: it reads no changes, and waits, holding no
// slot, until Conduit stops it.
func (s *Source) idleAfterSnapshot(ctx context.Context) error {
	sdk.Logger(ctx).Info("postgres: the snapshot is read and snapshot.mode is initial_only: the source reads no changes and stays idle until the pipeline is stopped")
	<-ctx.Done()
	return nil
}
