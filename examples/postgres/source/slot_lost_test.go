package source

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	connmetrics "github.com/connkit/connkit/internal/metrics"
	"github.com/connkit/connkit/internal/metrics/metricstest"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// tableRows is table a's rows, id to n.
func tableRows(t *testing.T, conn *pgx.Conn) map[int64]int64 { return nByID(t, conn, "a") }

// streamedThenStopped reads a's 100 rows and 10 changes into copy, acks
// them, and stops the source once the slot is confirmed past them. It
// returns the last position.
func streamedThenStopped(t *testing.T, url string, conn *pgx.Conn, copy upserts) sdk.Position {
	t.Helper()
	s := openSource(t, url, map[string]string{"tables": "a"}, nil)
	recs := readN(t, s, 100)
	pgtest.Exec(t, conn, `INSERT INTO a SELECT i, i FROM generate_series(101, 110) i`)
	recs = append(recs, readN(t, s, 10)...)
	copy.apply(t, recs...)
	ackAll(t, s, recs)
	last := recs[len(recs)-1].Position
	lsn, err := positionLSN(last)
	if err != nil {
		t.Fatal(err)
	}
	waitConfirmed(t, conn, lsn.String())
	if err := s.Teardown(t.Context()); err != nil {
		t.Fatal(err)
	}
	return last
}

// A slot the server invalidated while the source was stopped fails Open
// with what happened and what to do; with snapshot.mode when_needed the
// source starts again from a new slot, snapshotting the table while its
// changes stream, and the copy equals the table.
func TestSourceLostSlot(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `CREATE TABLE a (id int PRIMARY KEY, n bigint); INSERT INTO a SELECT i, i FROM generate_series(1, 100) i`)
	slot := url[strings.LastIndex(url, "/")+1 : strings.Index(url, "?")]
	copy := upserts{}
	last := streamedThenStopped(t, url, conn, copy)

	// While it is stopped, rows change and the slot falls behind.
	pgtest.Exec(t, conn, `INSERT INTO a SELECT i, i FROM generate_series(111, 130) i; UPDATE a SET n = -id WHERE id <= 5`)
	pgtest.InvalidateSlot(t, conn, slot)

	failed, err := tryOpenSource(t, url, map[string]string{"tables": "a"}, last)
	is.True(err != nil)
	is.NoErr(failed.Teardown(t.Context()))
	for _, want := range []string{
		"replication slot " + slot + " was invalidated: it fell more than max_slot_wal_keep_size behind",
		"raise max_slot_wal_keep_size",
		`set parameter "snapshot.mode" to when_needed`,
		"SELECT pg_drop_replication_slot('" + slot + "')",
		"reset the pipeline's position",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want %q in it", err, want)
		}
	}

	s := openSource(t, url, map[string]string{"tables": "a", "snapshot.mode": "when_needed", "snapshot.fetchSize": "40"}, last)
	pgtest.Exec(t, conn, `INSERT INTO a SELECT i, i FROM generate_series(131, 140) i; UPDATE a SET n = 0 WHERE id = 120`)
	for !maps.Equal(copy["a"], tableRows(t, conn)) {
		recs := readN(t, s, 1)
		copy.apply(t, recs...)
		ackAll(t, s, recs)
	}
	var status string
	is.NoErr(conn.QueryRow(t.Context(), `SELECT wal_status FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&status))
	is.True(status != "lost") // a new slot
	nothingMore(t, s)
}

// A slot invalidated while the source streams, changes read and not
// acknowledged, fails the source with what happened and what to do.
func TestSourceSlotLostWhileStreaming(t *testing.T) {
	url, conn := sourceDB(t, `CREATE TABLE a (id int PRIMARY KEY, n bigint)`)
	slot := url[strings.LastIndex(url, "/")+1 : strings.Index(url, "?")]
	s := openSource(t, url, map[string]string{"tables": "a"}, nil)
	pgtest.Exec(t, conn, `INSERT INTO a VALUES (1, 1)`)
	readN(t, s, 1) // not acknowledged: the slot stays behind it
	pgtest.InvalidateSlot(t, conn, slot)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := s.Read(ctx)
	want := "replication slot " + slot + " was invalidated while the source ran: it fell more than max_slot_wal_keep_size behind"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "when_needed") {
		t.Fatalf("got %v, want %q in it", err, want)
	}
}

// A position whose slot was dropped fails Open, saying what to do.
func TestSourceMissingSlot(t *testing.T) {
	url, conn := sourceDB(t, `CREATE TABLE a (id int PRIMARY KEY, n bigint); INSERT INTO a SELECT i, i FROM generate_series(1, 100) i`)
	slot := url[strings.LastIndex(url, "/")+1 : strings.Index(url, "?")]
	last := streamedThenStopped(t, url, conn, upserts{})
	pgtest.DropSlots(t.Context(), conn, 5*time.Second) // once the server notices the reader is gone
	_, err := tryOpenSource(t, url, map[string]string{"tables": "a"}, last)
	want := "replication slot " + slot + ` does not exist, so the changes since position ` + string(last) + ` are gone: set parameter "snapshot.mode" to when_needed`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q in it", err, want)
	}
}

// snapshot.mode initial_only reads the rows, keeps no slot and reads no
// changes; a restart reads the rest of the rows as they are then. always
// reads every row again at a start.
func TestSourceSnapshotOnlyAndAlways(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `CREATE TABLE a (id int PRIMARY KEY, n bigint); INSERT INTO a SELECT i, i FROM generate_series(1, 100) i`)
	only := map[string]string{"tables": "a", "snapshot.mode": "initial_only", "snapshot.fetchSize": "30"}
	s := openSource(t, url, only, nil)
	recs := readN(t, s, 60)
	ackAll(t, s, recs)
	is.NoErr(s.Teardown(t.Context()))
	// Rows changed before the snapshot resumes are read as they are then.
	pgtest.Exec(t, conn, `UPDATE a SET n = -n WHERE id = 80; INSERT INTO a VALUES (101, 101)`)
	s = openSource(t, url, only, recs[len(recs)-1].Position)
	copy := upserts{}
	copy.apply(t, recs...)
	copy.apply(t, readN(t, s, 41)...)
	is.Equal(copy["a"], tableRows(t, conn))
	var slots int
	is.NoErr(conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_replication_slots WHERE database = current_database()`).Scan(&slots))
	is.Equal(slots, 0) // the server keeps no WAL for it
	pgtest.Exec(t, conn, `INSERT INTO a VALUES (102, 102)`)
	nothingMore(t, s)
	is.NoErr(s.Teardown(t.Context()))

	always := map[string]string{"tables": "a", "snapshot.mode": "always"}
	s = openSource(t, url, always, nil)
	recs = readN(t, s, 102)
	ackAll(t, s, recs)
	is.NoErr(s.Teardown(t.Context()))
	s = openSource(t, url, always, recs[len(recs)-1].Position)
	again := readN(t, s, 102)
	is.Equal(again[0].Operation, sdk.OperationSnapshot)
	nothingMore(t, s)
}

// The slot's wal_status and safe_wal_size are exported: -1 while
// max_slot_wal_keep_size sets no limit, the WAL left before the slot is
// lost once it does.
func TestSourceSlotHealthMetrics(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `CREATE TABLE a (id int PRIMARY KEY, n bigint)`)
	ctx, address := metricstest.Serve(t, t.Context(), connmetrics.Labels{ConnectorID: "p:source", Plugin: "postgres", Version: "v0.1.0", Role: "source"})
	raw := map[string]string{"url": url, "tables": "a", "slot.name": url[strings.LastIndex(url, "/")+1 : strings.Index(url, "?")]}
	src, err := sdk.NewSource(New).New(raw)
	is.NoErr(err)
	t.Cleanup(func() { src.Teardown(context.Background()) })
	is.NoErr(src.Open(ctx, nil))

	metricstest.Eventually(t, address, "1", func(v float64) bool { return v == 1 }, "connkit_postgres_slot_wal_status", "status=reserved")
	is.Equal(metricstest.Sample(t, address, "connkit_postgres_slot_wal_status", "status=lost"), 0.0)
	is.Equal(metricstest.Sample(t, address, "connkit_postgres_slot_safe_wal_size_bytes"), -1.0)

	pgtest.Exec(t, conn, `ALTER SYSTEM SET max_slot_wal_keep_size = '64MB'`)
	t.Cleanup(func() {
		conn.Exec(context.Background(), `ALTER SYSTEM RESET max_slot_wal_keep_size`)
		conn.Exec(context.Background(), `SELECT pg_reload_conf()`)
	})
	pgtest.Exec(t, conn, `SELECT pg_reload_conf()`)
	safe := metricstest.Eventually(t, address, "above 0", func(v float64) bool { return v > 0 }, "connkit_postgres_slot_safe_wal_size_bytes")
	is.True(safe <= 64<<20+16<<20) // the limit, and at most the segment being written
}
