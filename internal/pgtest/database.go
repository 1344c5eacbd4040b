package pgtest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// TB is what Database needs of a test or benchmark; *testing.T and
// *testing.B have it.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
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

// Exec runs sql on conn, failing the test if it fails.
func Exec(t TB, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// Rows returns a query's rows, each rendered as its columns' values
// (fmt.Sprint of what pgx scans) joined by "|".
func Rows(t TB, conn *pgx.Conn, query string) []string {
	t.Helper()
	rs, err := conn.Query(t.Context(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		vals, err := rs.Values()
		if err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// StartFor starts a server of the test's own, with extra settings as
// StartWith takes them, and stops it when the test ends.
func StartFor(t TB, settings ...string) *Server {
	t.Helper()
	s, err := StartWith(settings...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}
