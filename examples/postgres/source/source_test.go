package source

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/connkit/connkit/examples/postgres/destination"
	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

func TestSourceSnapshotTypesAndKeys(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `
		CREATE TABLE kinds (
			id bigint PRIMARY KEY, small smallint, i int, big bigint, r real, d double precision, n numeric(20,5),
			b boolean, t text, vc varchar(10), j jsonb, js json, ts timestamp, tz timestamptz, day date,
			u uuid, raw bytea, arr int[], huge bigint, nan double precision, gen int GENERATED ALWAYS AS (i * 2) STORED);
		INSERT INTO kinds VALUES
			(1, 1, 2, 3, 1.5, 2.25, 12345678901234.5, true, 'a''b', 'x', '{"a": [1, "b"]}', '[1]', '2026-01-02 03:04:05.123456', '2026-01-02 03:04:05+02', '2026-01-02',
			 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\x0102ff', '{1,2}', 9007199254740993, 'NaN'),
			(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
		CREATE SCHEMA sales;
		CREATE TABLE sales.lines (order_id int, line int, item text, PRIMARY KEY (order_id, line));
		INSERT INTO sales.lines SELECT o, l, 'item ' || o || '/' || l FROM generate_series(1, 3) o, generate_series(1, 3) l;
	`)
	s := openSource(t, url, map[string]string{"tables": "kinds,sales.*", "snapshot.fetchSize": "2"}, nil)
	recs := readN(t, s, 11)
	nothingMore(t, s)

	is.Equal(recs[0].Operation, sdk.OperationSnapshot)
	is.Equal(recs[0].Metadata["opencdc.collection"], "kinds") // tables in public go by their name
	is.Equal(recs[0].Key, sdk.StructuredData{"id": int64(1)})
	is.Equal(recs[0].Payload.After, sdk.StructuredData{
		"id": int64(1), "small": int64(1), "i": int64(2), "big": int64(3), "r": 1.5, "d": 2.25, "n": "12345678901234.50000",
		"b": true, "t": "a'b", "vc": "x", "j": `{"a": [1, "b"]}`, "js": "[1]", // JSON text, verbatim
		"ts": time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC), "tz": time.Date(2026, 1, 2, 1, 4, 5, 0, time.UTC), "day": "2026-01-02",
		"u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "raw": `\x0102ff`, "arr": "{1,2}",
		"huge": int64(9007199254740993), // beyond a double's integers: the wire encoder makes it text
		"nan":  "NaN",
	})
	is.Equal(recs[0].Metadata[pg.ColumnsKey], `[{"name":"id","type":"bigint","notNull":true,"key":1},{"name":"small","type":"smallint"},`+
		`{"name":"i","type":"integer"},{"name":"big","type":"bigint"},{"name":"r","type":"real"},{"name":"d","type":"double precision"},`+
		`{"name":"n","type":"numeric(20,5)"},{"name":"b","type":"boolean"},{"name":"t","type":"text"},{"name":"vc","type":"character varying(10)"},`+
		`{"name":"j","type":"jsonb"},{"name":"js","type":"json"},{"name":"ts","type":"timestamp without time zone"},`+
		`{"name":"tz","type":"timestamp with time zone"},{"name":"day","type":"date"},{"name":"u","type":"uuid"},{"name":"raw","type":"bytea"},`+
		`{"name":"arr","type":"integer[]"},{"name":"huge","type":"bigint"},{"name":"nan","type":"double precision"}]`)
	is.Equal(recs[1].Payload.After.(sdk.StructuredData)["t"], nil)
	is.Equal(len(recs[1].Payload.After.(sdk.StructuredData)), 20) // every column but the generated one

	// Composite keys, in key order, after the first table.
	for i, r := range recs[2:] {
		o, l := i/3+1, i%3+1
		is.Equal(r.Metadata["opencdc.collection"], "sales.lines")
		is.Equal(r.Key, sdk.StructuredData{"order_id": int64(o), "line": int64(l)})
		is.Equal(r.Payload.After.(sdk.StructuredData)["item"], fmt.Sprintf("item %d/%d", o, l))
		is.Equal(r.Metadata[pg.ColumnsKey], `[{"name":"order_id","type":"integer","notNull":true,"key":1},{"name":"line","type":"integer","notNull":true,"key":2},{"name":"item","type":"text"}]`)
	}
	positions := map[string]bool{}
	for _, r := range recs {
		positions[string(r.Position)] = true
	}
	is.Equal(len(positions), len(recs)) // unique

	// What the source read, the destination writes back unchanged.
	pgtest.Exec(t, conn, `CREATE SCHEMA copy; CREATE TABLE copy.kinds (LIKE kinds INCLUDING ALL)`)
	d, err := destination.New(destination.Config{URL: url, Table: "copy.kinds"})
	is.NoErr(err)
	is.NoErr(d.Open(t.Context()))
	defer d.Teardown(context.Background())
	n, err := d.Write(t.Context(), recs[:2])
	is.NoErr(err)
	is.Equal(n, 2)
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*) FROM kinds k FULL JOIN copy.kinds c ON to_jsonb(k) = to_jsonb(c) WHERE k.id IS NULL OR c.id IS NULL`), []string{"0"})
}

func TestSourceChanges(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `
		CREATE TABLE a (id int PRIMARY KEY, v text);
		CREATE TABLE b (k1 text, k2 int, v int, PRIMARY KEY (k1, k2));
		ALTER TABLE b REPLICA IDENTITY FULL;
		CREATE TABLE other (id int PRIMARY KEY);
		INSERT INTO a VALUES (1, 'snap');
	`)
	s := openSource(t, url, map[string]string{"tables": "a,b"}, nil)
	snap := readN(t, s, 1)
	is.Equal(snap[0].Operation, sdk.OperationSnapshot)

	pgtest.Exec(t, conn, `INSERT INTO a VALUES (2, 'two'), (3, 'three')`)
	pgtest.Exec(t, conn, `INSERT INTO other VALUES (1)`) // not a table of the source
	pgtest.Exec(t, conn, `BEGIN; INSERT INTO b VALUES ('x', 1, 10); UPDATE a SET v = 'TWO' WHERE id = 2; UPDATE b SET v = 11; DELETE FROM a WHERE id = 3; DELETE FROM b; COMMIT`)
	pgtest.Exec(t, conn, `UPDATE a SET id = 4 WHERE id = 1`)
	recs := readN(t, s, 8)
	nothingMore(t, s)

	type change struct {
		op                 sdk.Operation
		collection         string
		key, before, after sdk.Data
	}
	var got []change
	for _, r := range recs {
		got = append(got, change{r.Operation, r.Metadata["opencdc.collection"], r.Key, r.Payload.Before, r.Payload.After})
	}
	sd := func(kv ...any) sdk.StructuredData {
		d := sdk.StructuredData{}
		for i := 0; i < len(kv); i += 2 {
			d[kv[i].(string)] = kv[i+1]
		}
		return d
	}
	is.Equal(got, []change{
		{sdk.OperationCreate, "a", sd("id", int64(2)), nil, sd("id", int64(2), "v", "two")},
		{sdk.OperationCreate, "a", sd("id", int64(3)), nil, sd("id", int64(3), "v", "three")},
		{sdk.OperationCreate, "b", sd("k1", "x", "k2", int64(1)), nil, sd("k1", "x", "k2", int64(1), "v", int64(10))},
		{sdk.OperationUpdate, "a", sd("id", int64(2)), nil, sd("id", int64(2), "v", "TWO")}, // default replica identity: no before-image
		{sdk.OperationUpdate, "b", sd("k1", "x", "k2", int64(1)), sd("k1", "x", "k2", int64(1), "v", int64(10)), sd("k1", "x", "k2", int64(1), "v", int64(11))},
		{sdk.OperationDelete, "a", sd("id", int64(3)), nil, nil},
		{sdk.OperationDelete, "b", sd("k1", "x", "k2", int64(1)), sd("k1", "x", "k2", int64(1), "v", int64(11)), nil},
		{sdk.OperationUpdate, "a", sd("id", int64(4)), sd("id", int64(1)), sd("id", int64(4), "v", "snap")}, // a changed key: the old one
	})

	// Acked changes are confirmed to the server.
	ackAll(t, s, append(snap, recs...))
	last, err := parsePosition(recs[len(recs)-1].Position)
	is.NoErr(err)
	waitConfirmed(t, conn, last.lsn().String())
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
			out = append(out, fmt.Sprint(r.Metadata["opencdc.collection"], r.Key))
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

func TestSourceSnapshotHandover(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `
		CREATE TABLE items (id int PRIMARY KEY, n int);
		INSERT INTO items SELECT i, 0 FROM generate_series(1, 20000) i;
	`)
	s := openSource(t, url, map[string]string{"tables": "items", "snapshot.fetchSize": "500"}, nil)

	// Writes go on while the snapshot is read.
	writer, err := pgx.Connect(t.Context(), url)
	is.NoErr(err)
	defer writer.Close(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var werr error
	go func() {
		defer wg.Done()
		for i := 1; i <= 300 && werr == nil; i++ {
			_, werr = writer.Exec(context.Background(), `
				UPDATE items SET n = n + 1 WHERE id = $1 OR id = 20001 - $1;
				DELETE FROM items WHERE id = 10000 + $1;
				INSERT INTO items VALUES (20000 + $1, $1)`, i*13)
		}
		_, werr = writer.Exec(context.Background(), `INSERT INTO items VALUES (-1, -1)`) // the last write
	}()

	table := map[int64]int64{}
	snapshotKeys := map[int64]bool{}
	positions := map[string]bool{}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for done := false; !done; {
		recs, err := s.ReadBatch(ctx, 1000)
		is.NoErr(err)
		for _, r := range recs {
			is.True(!positions[string(r.Position)])
			positions[string(r.Position)] = true
			id := r.Key.(sdk.StructuredData)["id"].(int64)
			switch r.Operation {
			case sdk.OperationSnapshot:
				is.True(!snapshotKeys[id]) // each row once
				snapshotKeys[id] = true
				table[id] = r.Payload.After.(sdk.StructuredData)["n"].(int64)
			case sdk.OperationDelete:
				delete(table, id)
			default:
				table[id] = r.Payload.After.(sdk.StructuredData)["n"].(int64)
			}
			done = done || id == -1
		}
	}
	wg.Wait()
	is.NoErr(werr)
	want := map[int64]int64{}
	rs, err := conn.Query(t.Context(), `SELECT id, n FROM items`)
	is.NoErr(err)
	for rs.Next() {
		var id, n int64
		is.NoErr(rs.Scan(&id, &n))
		want[id] = n
	}
	is.NoErr(rs.Err())
	is.Equal(len(table), len(want))
	is.True(maps.Equal(table, want))
}

func TestSourceStalledReader(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `CREATE TABLE a (id int PRIMARY KEY)`)
	// The server drops a replication connection it has not heard from for
	// wal_sender_timeout; the source must keep talking while nobody reads.
	defer func(d time.Duration) { statusInterval = d }(statusInterval)
	statusInterval = 100 * time.Millisecond
	url += "&options=-c%20wal_sender_timeout%3D1s"
	s := openSource(t, url, map[string]string{"tables": "a", "snapshot.mode": "never", "snapshot.fetchSize": "10"}, nil)
	// Far more changes than the source holds, with nobody reading, for
	// several times wal_sender_timeout.
	pgtest.Exec(t, conn, `INSERT INTO a SELECT generate_series(1, 5000)`)
	for i := range 50 {
		pgtest.Exec(t, conn, `INSERT INTO a VALUES ($1)`, 10000+i)
	}
	time.Sleep(3 * time.Second)
	recs := readN(t, s, 5050)
	is.Equal(recs[0].Key, sdk.StructuredData{"id": int64(1)})
	is.Equal(recs[5049].Key, sdk.StructuredData{"id": int64(10049)})
	nothingMore(t, s)
}

func TestSourceErrors(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `
		CREATE TABLE keyless (v int);
		CREATE TABLE a (id int PRIMARY KEY);
		CREATE ROLE plain LOGIN;
		CREATE ROLE replicator LOGIN REPLICATION;
	`)
	t.Cleanup(func() {
		conn.Exec(context.Background(), `DROP OWNED BY plain, replicator; DROP ROLE plain; DROP ROLE replicator`)
	})
	as := func(role string) string { return strings.Replace(url, "postgres@", role+"@", 1) }
	for _, tt := range []struct {
		name, url, tables, want string
	}{
		{"no primary key", url, "keyless", "table public.keyless has no primary key"},
		{"missing table", url, "nope", "table nope does not exist"},
		{"empty schema", url, "nothing.*", `matches no table`},
		{"no replication attribute", as("plain"), "a", `role "plain" may not use logical replication: ALTER ROLE plain WITH REPLICATION`},
		{"no select privilege", as("replicator"), "a", "may not SELECT from table public.a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tryOpenSource(t, tt.url, map[string]string{"tables": tt.tables}, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}

	t.Run("slot in use", func(t *testing.T) {
		openSource(t, url, map[string]string{"tables": "a"}, nil)
		defer func(d time.Duration) { slotWait = d }(slotWait)
		slotWait = 200 * time.Millisecond
		_, err := tryOpenSource(t, url, map[string]string{"tables": "a"}, nil)
		is.True(err != nil)
		// Who holds it, and how to end it.
		is.True(strings.Contains(err.Error(), "is held by server process "))
		is.True(strings.Contains(err.Error(), "user postgres, from 127.0.0.1:"))
		is.True(strings.Contains(err.Error(), "end its connection with SELECT pg_terminate_backend("))
	})

	t.Run("slot streamed by another reader", func(t *testing.T) {
		// A reader that is not a source (pg_recvlogical, another tool)
		// streams from the slot: the server names its process.
		openSource(t, url, map[string]string{"tables": "a", "slot.name": "busy"}, nil).Teardown(t.Context())
		cfg, err := pgconn.ParseConfig(url)
		is.NoErr(err)
		cfg.RuntimeParams["replication"] = "database"
		cfg.RuntimeParams["application_name"] = "other-reader"
		repl, err := pgconn.ConnectConfig(t.Context(), cfg)
		is.NoErr(err)
		defer repl.Close(context.Background())
		is.NoErr(pglogrepl.StartReplication(t.Context(), repl, "busy", 0, pglogrepl.StartReplicationOptions{
			Mode: pglogrepl.LogicalReplication, PluginArgs: []string{"proto_version '1'", "publication_names 'connkit'"},
		}))
		defer func(d time.Duration) { slotWait = d }(slotWait)
		slotWait = 200 * time.Millisecond
		_, err = tryOpenSource(t, url, map[string]string{"tables": "a", "slot.name": "busy"}, nil)
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "replication slot busy is held by server process "))
		is.True(strings.Contains(err.Error(), "(application other-reader, user postgres, from 127.0.0.1:"))
		is.True(strings.Contains(err.Error(), "state streaming"))
		is.True(strings.Contains(err.Error(), "SELECT pg_terminate_backend("))
	})

	t.Run("slot of another database", func(t *testing.T) {
		other, _ := sourceDB(t, `CREATE TABLE a (id int PRIMARY KEY)`)
		openSource(t, other, map[string]string{"tables": "a", "slot.name": "shared"}, nil).Teardown(t.Context())
		_, err := tryOpenSource(t, url, map[string]string{"tables": "a", "slot.name": "shared"}, nil)
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "replication slot shared belongs to another database"))
	})

	t.Run("bad position", func(t *testing.T) {
		_, err := tryOpenSource(t, url, map[string]string{"tables": "a"}, sdk.Position("42"))
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "not a postgres source position"))
	})
}

func TestSourceNeedsLogicalWAL(t *testing.T) {
	leakcheck.Check(t)
	srv, err := pgtest.StartWith("wal_level=replica")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	_, err = tryOpenSource(t, srv.URL, map[string]string{"tables": "*"}, nil)
	if err == nil || !strings.Contains(err.Error(), `PostgreSQL's wal_level is "replica", and the source needs logical`) {
		t.Fatalf("got %v, want an error about wal_level", err)
	}
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

// BenchmarkSourceSnapshot reads a snapshot of 4-column rows in process.
func BenchmarkSourceSnapshot(b *testing.B) {
	const rows = 50000
	url, _ := server.Database(b, fmt.Sprintf(`CREATE TABLE items (id bigint PRIMARY KEY, a text, b text, n int);
		INSERT INTO items SELECT i, 'row-' || i, 'a text column of moderate length', i %% 1000 FROM generate_series(1, %d) i`, rows))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		benchRead(b, map[string]string{"url": url, "tables": "items", "slot.name": fmt.Sprintf("bench_%d", i)}, rows, func() {})
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkSourceChanges streams inserts of 4-column rows in process.
func BenchmarkSourceChanges(b *testing.B) {
	const rows = 100000
	url, conn := server.Database(b, `CREATE TABLE items (id bigint PRIMARY KEY, a text, b text, n int)`)
	b.ReportAllocs()
	var elapsed time.Duration
	for i := range b.N {
		elapsed += benchRead(b, map[string]string{"url": url, "tables": "items", "snapshot.mode": "never", "slot.name": fmt.Sprintf("bench_%d", i)}, rows, func() {
			if _, err := conn.Exec(b.Context(), fmt.Sprintf(`TRUNCATE items; INSERT INTO items SELECT i, 'row-' || i, 'a text column of moderate length', i %% 1000 FROM generate_series(1, %d) i`, rows)); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.ReportMetric(float64(rows*b.N)/elapsed.Seconds(), "records/s")
}

// benchRead opens a source with settings and runs write, then reads rows
// records in batches of 1000 and returns how long the reading took. It
// tears the source down and drops its slot before it returns.
func benchRead(b *testing.B, settings map[string]string, rows int, write func()) time.Duration {
	src, err := sdk.NewSource(New).New(settings)
	if err != nil {
		b.Fatal(err)
	}
	if err := src.Open(b.Context(), nil); err != nil {
		b.Fatal(err)
	}
	write()
	start := time.Now()
	s := src.(*Source)
	for n := 0; n < rows; {
		recs, err := s.ReadBatch(b.Context(), 1000)
		if err != nil {
			b.Fatal(err)
		}
		n += len(recs)
	}
	elapsed := time.Since(start)
	src.Teardown(context.Background())
	if err := s.OnDeleted(context.Background()); err != nil {
		b.Fatal(err)
	}
	return elapsed
}

func TestSourceNames(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `
		CREATE SCHEMA "Sales";
		CREATE TABLE "Sales"."Order Lines" ("Id" int PRIMARY KEY, "Item" text);
		CREATE TABLE "a.b" (k text PRIMARY KEY);
		INSERT INTO "Sales"."Order Lines" VALUES (1, 'x');
		INSERT INTO "a.b" VALUES ('it''s');
	`)
	s := openSource(t, url, map[string]string{"tables": `"Sales"."Order Lines","a.b"`}, nil)
	recs := readN(t, s, 2)
	pgtest.Exec(t, conn, `UPDATE "Sales"."Order Lines" SET "Item" = 'y'`)
	pgtest.Exec(t, conn, `DELETE FROM "a.b"`)
	recs = append(recs, readN(t, s, 2)...)
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprint(r.Operation, " ", r.Metadata["opencdc.collection"], " ", r.Key))
	}
	is.Equal(got, []string{ // tables in schema order, then name order: "Sales" < public
		"snapshot Sales.Order Lines map[Id:1]",
		`snapshot "a.b" map[k:it's]`,
		"update Sales.Order Lines map[Id:1]",
		`delete "a.b" map[k:it's]`,
	})

	// A restart after the first table's row reads the rest under a fresh
	// snapshot, where the second table's row is gone and the first's
	// updated (so neither is read: both come as changes), then every
	// change, under the positions it had.
	ackAll(t, s, recs[:1])
	is.NoErr(s.Teardown(t.Context()))
	s = openSource(t, url, map[string]string{"tables": `"Sales"."Order Lines","a.b"`}, recs[0].Position)
	again := readN(t, s, 2)
	for i, r := range again {
		want, err := parsePosition(recs[2+i].Position)
		is.NoErr(err)
		got, err := parsePosition(r.Position)
		is.NoErr(err)
		is.Equal(got.LSN, want.LSN)
		is.Equal(got.Index, want.Index)
		is.Equal(r.Position, recs[2+i].Position)
		is.Equal(r.Operation, recs[2+i].Operation)
	}
	nothingMore(t, s)
}
