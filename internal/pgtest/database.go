package pgtest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// TB is what Database needs of a test or benchmark; *testing.T and
// *testing.B have it.
type TB interface {
	Helper()
	Fatal(args ...any)
	Cleanup(func())
	Context() context.Context
}

var databases atomic.Int64

// Database creates a database of its own for a test, runs ddl in it (if
// not empty), and returns its URL and a connection to it that is closed
// when the test ends.
func (s *Server) Database(t TB, ddl string) (string, *pgx.Conn) {
	t.Helper()
	url, err := s.CreateDatabase(t.Context(), fmt.Sprintf("db_%d", databases.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if ddl != "" {
		if _, err := conn.Exec(t.Context(), ddl); err != nil {
			t.Fatal(err)
		}
	}
	return url, conn
}

// DropSlots drops the replication slots of conn's database, waiting up to
// wait for those still held: a slot stays active until the server notices
// that its reader is gone.
func DropSlots(ctx context.Context, conn *pgx.Conn, wait time.Duration) {
	for deadline := time.Now().Add(wait); ; {
		var left int
		err := conn.QueryRow(ctx, `SELECT count(pg_drop_replication_slot(slot_name)) FILTER (WHERE NOT active) - count(*)
			FROM pg_replication_slots WHERE database = current_database()`).Scan(&left)
		if err != nil || left == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
