package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// slotWait is how long Open waits for a replication slot that another
// connection holds to become free: a plugin process that just died (and
// is being restarted) holds it until the server notices.
var slotWait = 10 * time.Second

// slotInfo is what the server says of a replication slot.
type slotInfo struct {
	exists    bool
	confirmed pglogrepl.LSN // confirmed_flush_lsn
	health    slotHealth    // whether the server still keeps the slot's WAL (slot.go)
}

// lockSlot acquires a session-level advisory lock named after the slot on
// conn, waiting up to slotWait for another holder to let go. Every source
// holds it on its own connection from Open to Teardown, so a second source
// cannot claim, drop or recreate a slot that the first has not started
// streaming from yet (during a snapshot no server process holds the slot
// itself). The lock goes with the connection.
func lockSlot(ctx context.Context, conn *pgx.Conn, name string) error {
	deadline := time.Now().Add(slotWait)
	for {
		var locked bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext('connkit replication slot'), hashtext($1))`, name).Scan(&locked); err != nil {
			return fmt.Errorf("lock replication slot %s: %w", name, err)
		}
		if locked {
			return nil
		}
		if time.Now().After(deadline) {
			var pid *int32
			_ = conn.QueryRow(ctx, `
				SELECT pid FROM pg_locks
				WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
					AND classid = hashtext('connkit replication slot')::oid AND objid = hashtext($1)::oid`, name).Scan(&pid)
			return slotHeld(ctx, conn, name, pid)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// inspectSlot returns what the server says of the slot once no other
// connection holds it, waiting up to slotWait for that. A slot of another
// database or output plugin is an error.
func inspectSlot(ctx context.Context, conn *pgx.Conn, name string) (slotInfo, error) {
	deadline := time.Now().Add(slotWait)
	for {
		var (
			st             slotInfo
			pid            *int32
			plugin, dbname *string
			confirmed      *string
			current        string
		)
		err := conn.QueryRow(ctx, `
			SELECT active_pid, plugin::text, database::text, confirmed_flush_lsn::text, current_database()::text, `+slotHealthColumns+`
			FROM pg_replication_slots s WHERE slot_name = $1`, name).Scan(&pid, &plugin, &dbname, &confirmed, &current, &st.health.walStatus, &st.health.reason, &st.health.conflicting)
		if errors.Is(err, pgx.ErrNoRows) {
			return st, nil
		}
		if err != nil {
			return st, fmt.Errorf("look up replication slot %s: %w", name, err)
		}
		st.exists = true
		if plugin == nil || *plugin != "pgoutput" {
			return st, fmt.Errorf("replication slot %s exists but is not a logical slot for pgoutput: choose another slot.name", name)
		}
		if dbname == nil || *dbname != current {
			return st, fmt.Errorf("replication slot %s belongs to another database: choose another slot.name", name)
		}
		if confirmed != nil {
			st.confirmed, _ = pglogrepl.ParseLSN(*confirmed)
		}
		if pid == nil {
			return st, nil
		}
		if time.Now().After(deadline) {
			return st, slotHeld(ctx, conn, name, pid)
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// slotHeld is the error for a replication slot that the server process
// pid (nil: not known) holds: who that is, as pg_stat_activity and
// pg_stat_replication know it, and how to end it.
func slotHeld(ctx context.Context, conn *pgx.Conn, name string, pid *int32) error {
	if pid == nil {
		return fmt.Errorf("replication slot %s is in use by another connection (another source holds it): only one reader per slot; stop the other reader or choose another slot.name", name)
	}
	var who []string
	var app, user, addr, state, since *string
	err := conn.QueryRow(ctx, `
		SELECT a.application_name, a.usename::text, coalesce(host(r.client_addr) || ':' || r.client_port, host(a.client_addr) || ':' || a.client_port, a.client_hostname),
			coalesce(r.state, a.state), to_char(a.backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"')
		FROM pg_stat_activity a LEFT JOIN pg_stat_replication r ON r.pid = a.pid
		WHERE a.pid = $1`, *pid).Scan(&app, &user, &addr, &state, &since)
	if err == nil {
		for _, f := range []struct {
			label string
			v     *string
		}{{"application", app}, {"user", user}, {"from", addr}, {"state", state}, {"since", since}} {
			if f.v != nil && *f.v != "" {
				who = append(who, f.label+" "+*f.v)
			}
		}
	}
	holder := fmt.Sprintf("server process %d", *pid)
	if len(who) > 0 {
		holder += " (" + strings.Join(who, ", ") + ")"
	}
	return fmt.Errorf("replication slot %s is held by %s: only one reader per slot; stop that reader, or end its connection with SELECT pg_terminate_backend(%d), or choose another slot.name", name, holder, *pid)
}

// claimSlot locks the slot on the query connection, so that no other
// reader streams from it, and inspects the slot.
func (s *Source) claimSlot(ctx context.Context) (slotInfo, error) {
	if err := lockSlot(ctx, s.conn, s.cfg.Slot.Name); err != nil {
		return slotInfo{}, err
	}
	return inspectSlot(ctx, s.conn, s.cfg.Slot.Name)
}

// dropReplication drops the slot (once no one holds it) and the
// publication, if they exist.
func dropReplication(ctx context.Context, conn *pgx.Conn, slot, publication string) error {
	if err := lockSlot(ctx, conn, slot); err != nil {
		return err
	}
	st, err := inspectSlot(ctx, conn, slot)
	if err != nil {
		return err
	}
	if st.exists {
		if _, err := conn.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, slot); err != nil {
			return fmt.Errorf("drop replication slot %s: %w", slot, err)
		}
	}
	if _, err := conn.Exec(ctx, "DROP PUBLICATION IF EXISTS "+pgx.Identifier{publication}.Sanitize()); err != nil {
		return fmt.Errorf("drop publication %s: %w", publication, err)
	}
	return nil
}

// A replication slot can be lost while the source is stopped: the server
// invalidates a slot that falls more than max_slot_wal_keep_size behind
// (wal_status lost), and someone may drop it. The changes since the
// position Conduit stored are then gone. With snapshot.mode when_needed
// the source starts again from a new slot and snapshots every table, as
// at its first start (start.go); otherwise Open fails with an error that says what happened
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

// createSlot creates the replication slot, exporting a snapshot or not as
// snapshotAction (EXPORT_SNAPSHOT, NOEXPORT_SNAPSHOT) says, and confirms
// its consistent point. It returns the exported snapshot's name.
func (s *Source) createSlot(ctx context.Context, snapshotAction string) (pglogrepl.CreateReplicationSlotResult, error) {
	created, err := pglogrepl.CreateReplicationSlot(ctx, s.repl, s.cfg.Slot.Name, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: snapshotAction})
	if err != nil {
		return created, s.errorf("create replication slot: %s", err)
	}
	lsn, _ := pglogrepl.ParseLSN(created.ConsistentPoint)
	s.acks.confirmed.Store(uint64(lsn))
	return created, nil
}

// exportedSnapshot is a snapshot exported by a replication slot: which
// transactions it sees, and the slot's consistent point, from which on
// the changes it does not see commit.
type exportedSnapshot struct {
	view       string // txid_snapshot's text
	consistent pglogrepl.LSN
}

// createSlotExporting creates the replication slot, whose snapshot the
// first copy's chunks are read against (engine.go).
func (s *Source) createSlotExporting(ctx context.Context) (exportedSnapshot, error) {
	created, err := s.createSlot(ctx, "EXPORT_SNAPSHOT")
	if err != nil {
		return exportedSnapshot{}, err
	}
	return s.importSnapshot(ctx, created)
}

// exportSnapshot creates the temporary replication slot tmp, which
// exports a snapshot, reads which transactions it sees, and drops the
// slot, which would keep WAL. purpose says, in an error, what the
// snapshot is for: an added table's chunks leave out the row versions it
// did not see (engine_versions.go).
func (s *Source) exportSnapshot(ctx context.Context, tmp, purpose string) (exportedSnapshot, error) {
	created, err := pglogrepl.CreateReplicationSlot(ctx, s.repl, tmp, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, Temporary: true, SnapshotAction: "EXPORT_SNAPSHOT"})
	if err != nil {
		return exportedSnapshot{}, s.errorf("create a temporary replication slot to "+purpose+": %s", err)
	}
	exported, err := s.importSnapshot(ctx, created)
	if err != nil {
		return exportedSnapshot{}, err
	}
	if err := pglogrepl.DropReplicationSlot(ctx, s.repl, tmp, pglogrepl.DropReplicationSlotOptions{}); err != nil {
		return exportedSnapshot{}, s.errorf("drop the temporary replication slot: %s", err)
	}
	return exported, nil
}

// importSnapshot reads which transactions the snapshot a slot exported
// sees, in a transaction of its own that imports it. The snapshot lives
// until the replication connection runs its next command.
func (s *Source) importSnapshot(ctx context.Context, created pglogrepl.CreateReplicationSlotResult) (exportedSnapshot, error) {
	tx, err := s.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return exportedSnapshot{}, s.errorf("begin a transaction to import the slot's snapshot: %s", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var view string
	if _, err := tx.Exec(ctx, fmt.Sprintf(`SET TRANSACTION SNAPSHOT '%s'`, strings.ReplaceAll(created.SnapshotName, "'", "''"))); err != nil {
		return exportedSnapshot{}, s.errorf("import the replication slot's snapshot: %s", err)
	}
	if err := tx.QueryRow(ctx, `SELECT txid_current_snapshot()::text`).Scan(&view); err != nil {
		return exportedSnapshot{}, s.errorf("read the snapshot's transactions: %s", err)
	}
	consistent, _ := pglogrepl.ParseLSN(created.ConsistentPoint)
	return exportedSnapshot{view: view, consistent: consistent}, tx.Commit(ctx)
}

// tempSlotName names a temporary slot of the slot's: the slot's name with
// suffix, within PostgreSQL's 63 bytes. The advisory lock on the slot's
// name keeps it to one source at a time.
func tempSlotName(slot, suffix string) string {
	return slot[:min(len(slot), 63-len(suffix))] + suffix
}
