package source

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// sourceDB creates a database with the given tables and returns its URL and
// a connection to it. The test's replication slot and publication are
// dropped when it ends.
func sourceDB(t *testing.T, ddl string) (string, *pgx.Conn) {
	t.Helper()
	leakcheck.Check(t)
	url, conn := server.Database(t, ddl)
	t.Cleanup(func() { pgtest.DropSlots(context.Background(), conn, 5*time.Second) })
	return url, conn
}

// openSource opens a source on url with the given settings from pos, and
// tears it down when the test ends.
func openSource(t *testing.T, url string, settings map[string]string, pos sdk.Position) *Source {
	t.Helper()
	s, err := tryOpenSource(t, url, settings, pos)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func tryOpenSource(t *testing.T, url string, settings map[string]string, pos sdk.Position) (*Source, error) {
	t.Helper()
	// Slots are the server's, not a database's: each test database has its own.
	raw := map[string]string{"url": url, "slot.name": url[strings.LastIndex(url, "/")+1 : strings.Index(url, "?")]}
	maps.Copy(raw, settings)
	src, err := sdk.NewSource(New).New(raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Teardown(context.Background()) })
	err = src.Open(t.Context(), pos)
	return src.(*Source), err
}

// readN reads n records, failing the test if they do not come within a
// minute.
func readN(t *testing.T, s *Source, n int) []sdk.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out []sdk.Record
	for len(out) < n {
		recs, err := s.ReadBatch(ctx, n-len(out))
		if err != nil {
			t.Fatalf("after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, recs...)
	}
	return out
}

// ackAll acks recs in order.
func ackAll(t *testing.T, s *Source, recs []sdk.Record) {
	t.Helper()
	for _, r := range recs {
		if err := s.Ack(t.Context(), r.Position); err != nil {
			t.Fatal(err)
		}
	}
}

// nothingMore checks that no record arrives for a moment.
func nothingMore(t *testing.T, s *Source) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if recs, err := s.ReadBatch(ctx, 10); err == nil {
		t.Fatalf("unexpected records: %v", recs)
	}
}

// waitConfirmed waits until the slot's confirmed_flush_lsn reaches lsn.
func waitConfirmed(t *testing.T, conn *pgx.Conn, lsn string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		if err := conn.QueryRow(t.Context(), `SELECT confirmed_flush_lsn >= $1::pg_lsn FROM pg_replication_slots WHERE database = current_database()`, lsn).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot's confirmed_flush_lsn did not reach %s", lsn)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitSlotIdle waits until no server process streams from the slot.
func waitSlotIdle(t *testing.T, conn *pgx.Conn, slot string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for pgtest.Rows(t, conn, `SELECT count(*) FROM pg_replication_slots WHERE slot_name = '`+slot+`' AND active_pid IS NULL`)[0] != "1" {
		if time.Now().After(deadline) {
			t.Fatalf("replication slot %s is still streamed from", slot)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSourceResumes(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `
		CREATE TABLE a (id int PRIMARY KEY, v text);
		CREATE TABLE b (k1 int, k2 text, PRIMARY KEY (k1, k2));
		INSERT INTO a SELECT i, 'a' || i FROM generate_series(1, 10) i;
		INSERT INTO b SELECT i % 3, 'k' || i FROM generate_series(1, 10) i;
	`)
	settings := map[string]string{"tables": "*", "snapshot.fetchSize": "3"}
	keys := func(recs []sdk.Record) []string {
		var out []string
		for _, r := range recs {
			out = append(out, fmt.Sprint(r.Metadata[sdk.MetadataCollection], r.Key))
		}
		return out
	}

	// A first run reads everything; the reference.
	s := openSource(t, url, settings, nil)
	all := keys(readN(t, s, 20))
	is.NoErr(s.Teardown(t.Context()))

	// Runs that stop after acking 4, 7 (mid-table) and 10 (a table's end)
	// records resume right after the last one acked.
	var pos sdk.Position
	var got []string
	for _, n := range []int{4, 3, 3, 10} {
		s := openSource(t, url, settings, pos)
		recs := readN(t, s, n)
		ackAll(t, s, recs)
		got = append(got, keys(recs)...)
		pos = recs[len(recs)-1].Position
		is.NoErr(s.Teardown(t.Context()))
	}
	is.Equal(got, all)

	// Then changes, several per transaction, resumed in the middle of one.
	s = openSource(t, url, settings, pos)
	nothingMore(t, s)
	pgtest.Exec(t, conn, `BEGIN; INSERT INTO a VALUES (11, 'x'), (12, 'y'), (13, 'z'); DELETE FROM b WHERE k1 = 0; COMMIT`)
	pgtest.Exec(t, conn, `UPDATE a SET v = 'w' WHERE id <= 3`)
	changes := readN(t, s, 9)
	ackAll(t, s, changes[:2])
	is.NoErr(s.Teardown(t.Context()))

	s = openSource(t, url, settings, changes[1].Position)
	rest := readN(t, s, 7)
	nothingMore(t, s)
	is.Equal(keys(rest), keys(changes[2:]))
	ackAll(t, s, rest[:4]) // the first transaction, whole
	is.NoErr(s.Teardown(t.Context()))

	s = openSource(t, url, settings, rest[3].Position)
	is.Equal(keys(readN(t, s, 3)), keys(changes[6:]))
	nothingMore(t, s)
}

func TestSourceDeleted(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `CREATE TABLE a (id int PRIMARY KEY)`)
	s := openSource(t, url, map[string]string{"tables": "a", "slot.name": "gone", "publication.name": "gone"}, nil)
	is.NoErr(s.Teardown(t.Context()))
	count := func() []string {
		return pgtest.Rows(t, conn, `SELECT (SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'gone') + (SELECT count(*) FROM pg_publication WHERE pubname = 'gone')
			+ (SELECT count(*) FROM connkit_snapshots WHERE slot = 'gone')`)
	}
	is.Equal(count(), []string{"3"})

	// Conduit calls OnDeleted on a source it builds for the purpose, never opened.
	kept, err := sdk.NewSource(New).New(map[string]string{"url": url, "tables": "a", "slot.name": "gone", "publication.name": "gone", "cleanup": "false"})
	is.NoErr(err)
	is.NoErr(kept.(sdk.DeletedHook).OnDeleted(t.Context()))
	is.Equal(count(), []string{"3"})
	fresh, err := sdk.NewSource(New).New(map[string]string{"url": url, "tables": "a", "slot.name": "gone", "publication.name": "gone"})
	is.NoErr(err)
	is.NoErr(fresh.(sdk.DeletedHook).OnDeleted(t.Context()))
	is.Equal(count(), []string{"0"})
	is.NoErr(fresh.(sdk.DeletedHook).OnDeleted(t.Context())) // twice is fine
}
