package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
	health    slotHealth    // whether the server still keeps the slot's WAL (lostslot.go)
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
