package pgtest

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// InvalidateSlot makes the server invalidate the replication slot named
// slot, as it does a slot that falls more than max_slot_wal_keep_size
// behind: it lowers that setting to 1MB, writes WAL on conn (a table
// pgtest_wal of its database), switches WAL segments and checkpoints
// until the slot's wal_status is lost, then restores the setting. Other
// slots of the server that lag as far are invalidated too.
func InvalidateSlot(t TB, conn *pgx.Conn, slot string) {
	t.Helper()
	ctx := t.Context()
	Exec(t, conn, `ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'`)
	Exec(t, conn, `SELECT pg_reload_conf()`)
	defer func() {
		ctx := context.Background()
		_, _ = conn.Exec(ctx, `ALTER SYSTEM RESET max_slot_wal_keep_size`)
		_, _ = conn.Exec(ctx, `SELECT pg_reload_conf()`)
	}()
	Exec(t, conn, `CREATE TABLE IF NOT EXISTS pgtest_wal (v text)`)
	deadline := time.Now().Add(time.Minute)
	for {
		var status string
		if err := conn.QueryRow(ctx, `SELECT coalesce(wal_status, '') FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&status); err != nil {
			t.Fatal(fmt.Errorf("look up replication slot %s: %w", slot, err))
		}
		if status == "lost" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replication slot %s is still %s", slot, status)
		}
		for range 3 {
			Exec(t, conn, `INSERT INTO pgtest_wal VALUES (repeat('x', 1000))`)
			Exec(t, conn, `SELECT pg_switch_wal()`)
		}
		Exec(t, conn, `CHECKPOINT`)
	}
}
