package source

import (
	"context"
	"fmt"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// A replication slot can be lost while the source is stopped: the server
// invalidates a slot that falls more than max_slot_wal_keep_size behind
// (wal_status lost), and someone may drop it. The changes since the
// position Conduit stored are then gone. With snapshot.mode when_needed
// the source starts again from a new slot and snapshots every table in
// watermark chunks while the changes stream, as it does for added tables
// (added.go); otherwise Open fails with an error that says what happened
// and what to do, rather than PostgreSQL's error when replication starts,
// which Conduit would retry forever.

// slotHealthColumns are the columns of pg_replication_slots s that say
// whether the slot is usable, read through to_jsonb so that a column a
// server's version lacks is an empty string: wal_status (PostgreSQL 13),
// invalidation_reason (17) and conflicting (16).
const slotHealthColumns = `coalesce(to_jsonb(s)->>'wal_status', ''), coalesce(to_jsonb(s)->>'invalidation_reason', ''), coalesce(to_jsonb(s)->>'conflicting', '')`

// slotHealth is what the server says of whether a slot is usable.
type slotHealth struct {
	walStatus   string // reserved, extended, unreserved or lost
	reason      string // invalidation_reason; empty: not invalidated, or not told
	conflicting string // "true": invalidated by a conflict with recovery on a standby
}

// invalidated returns, for a slot the server has invalidated, what
// happened and the setting that caused it.
func (h slotHealth) invalidated() (what, setting string, ok bool) {
	switch {
	case h.reason == "rows_removed" || h.reason == "" && h.conflicting == "true":
		return "it conflicted with recovery on this standby: the primary removed rows it still needed", "hot_standby_feedback", true
	case h.reason == "wal_level_insufficient":
		return "the primary's wal_level is no longer logical", "wal_level", true
	case h.reason == "idle_timeout":
		return "it was idle longer than idle_replication_slot_timeout", "idle_replication_slot_timeout", true
	case h.reason != "" || h.walStatus == "lost":
		return "it fell more than max_slot_wal_keep_size behind the server's WAL, which removed the WAL it still needed", "max_slot_wal_keep_size", true
	}
	return "", "", false
}

// gone reports whether the slot cannot give the changes after a position:
// it does not exist, or the server invalidated it.
func (i slotInfo) gone() bool {
	_, _, lost := i.health.invalidated()
	return !i.exists || lost
}

// slotGone is the error for a position whose slot is gone (missing or
// invalidated): what happened, what caused it and what to do.
func (s *Source) slotGone(from sdk.Position, slot slotInfo) error {
	name := s.cfg.Slot.Name
	what, setting := "does not exist", ""
	if slot.exists {
		w, set, _ := slot.health.invalidated()
		what, setting = "was invalidated: "+w, fmt.Sprintf(" (raise %s to let a slot fall further behind, or set it to -1 for no limit)", set)
	}
	return fmt.Errorf("replication slot %s %s, so the changes since position %s are gone%s: set parameter \"snapshot.mode\" to when_needed to start again with a fresh snapshot from a new slot, or drop the slot (SELECT pg_drop_replication_slot('%s')) and reset the pipeline's position (e.g. recreate the source connector)", name, what, from, setting, name)
}

// lostWhileRunning is the error for a slot that replication could not
// start from (55000) because the server invalidated it while the source
// ran, asked on a connection of its own; err, PostgreSQL's, otherwise.
func (s *Source) lostWhileRunning(ctx context.Context, err error) error {
	conn, cerr := pgx.Connect(ctx, s.cfg.URL)
	if cerr != nil {
		return s.errorf("start logical replication: %s", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var h slotHealth
	if cerr := conn.QueryRow(ctx, `SELECT `+slotHealthColumns+` FROM pg_replication_slots s WHERE slot_name = $1`, s.cfg.Slot.Name).Scan(&h.walStatus, &h.reason, &h.conflicting); cerr != nil {
		return s.errorf("start logical replication: %s", err)
	}
	what, setting, lost := h.invalidated()
	if !lost {
		return s.errorf("start logical replication: %s", err)
	}
	next := `set parameter "snapshot.mode" to when_needed and restart the pipeline to start again with a fresh snapshot from a new slot, or drop the slot (SELECT pg_drop_replication_slot('` + s.cfg.Slot.Name + `')) and reset the pipeline's position (e.g. recreate the source connector)`
	if s.cfg.Snapshot.Mode == "when_needed" {
		next = "the next start creates a new slot and snapshots every table again (snapshot.mode when_needed)"
	}
	return &sourceError{text: fmt.Sprintf("replication slot %s was invalidated while the source ran: %s, so the changes not yet acknowledged are gone (raise %s to let a slot fall further behind): %s", s.cfg.Slot.Name, what, setting, next), cause: err}
}

// recoverSlot starts again from a new slot, the position's slot being
// gone (snapshot.mode when_needed). A snapshot in progress starts over; a
// stream snapshots every table in watermark chunks while the changes
// stream from the new slot, as added tables are (added.go).
func (s *Source) recoverSlot(ctx context.Context, pos position, slot slotInfo) error {
	what := "does not exist"
	if slot.exists {
		what, _, _ = slot.health.invalidated()
		what = "was invalidated: " + what
	}
	sdk.Logger(ctx).Warn(fmt.Sprintf("postgres: replication slot %s %s, so the changes since the pipeline's position are gone; snapshot.mode is when_needed: creating a new slot and taking a fresh snapshot of every table", s.cfg.Slot.Name, what))
	if err := s.dropSlot(ctx, slot, "drop the invalidated replication slot"); err != nil {
		return err
	}
	if pos.snapshot() {
		return s.startSnapshot(ctx, slotInfo{})
	}
	if _, err := s.createSlot(ctx, "NOEXPORT_SNAPSHOT"); err != nil {
		return err
	}
	return s.snapshotAllWhileStreaming(ctx)
}

// dropSlot drops the slot, if it exists, so that one of the same name can
// be created; why is what the error says it was doing.
func (s *Source) dropSlot(ctx context.Context, slot slotInfo, why string) error {
	if !slot.exists {
		return nil
	}
	if err := pglogrepl.DropReplicationSlot(ctx, s.repl, s.cfg.Slot.Name, pglogrepl.DropReplicationSlotOptions{}); err != nil {
		return s.failedTo(why, err)
	}
	return nil
}

// snapshotAllWhileStreaming records every table as not snapshotted in the
// slot's state row and reads them in chunks while the changes stream
// from the new slot. If the state table cannot be written, the tables are
// only streamed (saveTableStates says why).
func (s *Source) snapshotAllWhileStreaming(ctx context.Context) error {
	a := &adder{s: s, state: map[string]tableState{}, byID: map[string]*sourceTable{}, windows: map[string]*replayed{}}
	for _, t := range s.catalog.tables {
		a.byID[t.ident], a.state[t.ident] = t, tableState{}
		a.todo = append(a.todo, t)
	}
	saved, err := s.saveTableStates(ctx, s.conn, a.state)
	if err != nil || !saved {
		return err
	}
	s.adder, s.from = a, streamFrom{}
	return s.startAdding(ctx, pglogrepl.LSN(s.acks.confirmed.Load()))
}

// idleAfterSnapshot is what the source does once the snapshot is read
// with snapshot.mode initial_only: it reads no changes, and waits,
// holding no slot, until Conduit stops it.
func (s *Source) idleAfterSnapshot(ctx context.Context) error {
	sdk.Logger(ctx).Info("postgres: the snapshot is read and snapshot.mode is initial_only: the source reads no changes and stays idle until the pipeline is stopped")
	<-ctx.Done()
	return nil
}

// releaseSlotForSnapshot drops the slot once its exported snapshot is
// imported, with snapshot.mode initial_only: no change is read, so the
// server need not keep WAL for it. The importing transaction keeps the
// snapshot.
func (s *Source) releaseSlotForSnapshot(ctx context.Context) error {
	if err := pglogrepl.DropReplicationSlot(ctx, s.repl, s.cfg.Slot.Name, pglogrepl.DropReplicationSlotOptions{}); err != nil {
		return s.errorf("drop the replication slot after importing its snapshot (snapshot.mode initial_only): %s", err)
	}
	return nil
}
