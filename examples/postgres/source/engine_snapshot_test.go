package source

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/connkit/connkit/examples/postgres/destination"
	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

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
	is.Equal(recs[0].Metadata[sdk.MetadataCollection], "kinds") // tables in public go by their name
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
		is.Equal(r.Metadata[sdk.MetadataCollection], "sales.lines")
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
	writesBackUnchanged(t, url, conn, recs[:2])
}

// writesBackUnchanged checks that the destination writes recs, the records
// of every row of kinds, to a copy of it that equals it.
func writesBackUnchanged(t *testing.T, url string, conn *pgx.Conn, recs []sdk.Record) {
	t.Helper()
	is := is.New(t)
	pgtest.Exec(t, conn, `CREATE SCHEMA copy; CREATE TABLE copy.kinds (LIKE kinds INCLUDING ALL)`)
	d, err := destination.New(destination.Config{URL: url, Table: "copy.kinds"})
	is.NoErr(err)
	is.NoErr(d.Open(t.Context()))
	defer d.Teardown(context.Background())
	n, err := d.Write(t.Context(), recs)
	is.NoErr(err)
	is.Equal(n, len(recs))
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*) FROM kinds k FULL JOIN copy.kinds c ON to_jsonb(k) = to_jsonb(c) WHERE k.id IS NULL OR c.id IS NULL`), []string{"0"})
}

// A snapshot read while rows are updated, deleted and inserted, ahead of
// the chunks and behind them, delivers each row once and every change:
// applied in order, the records hold the table; also with two chunks read
// at once.
func TestSourceSnapshotHandover(t *testing.T) {
	for _, parallelism := range []string{"1", "2"} {
		t.Run(parallelism, func(t *testing.T) { snapshotHandover(t, parallelism) })
	}
}

func snapshotHandover(t *testing.T, parallelism string) {
	is := is.New(t)
	url, conn := sourceDB(t, `
		CREATE TABLE items (id int PRIMARY KEY, n int);
		INSERT INTO items SELECT i, 0 FROM generate_series(1, 20000) i;
	`)
	s := openSource(t, url, map[string]string{"tables": "items", "snapshot.fetchSize": "500", "snapshot.parallelism": parallelism}, nil)
	stop := itemsWriter.start(t, url, 20000)

	table := map[int64]int64{}
	snapshotKeys := map[int64]bool{}
	positions := map[string]bool{}
	var want map[int64]int64
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	stopAt := time.Now().Add(time.Second)
	for want == nil || !maps.Equal(table, want) {
		if time.Now().After(stopAt) {
			is.NoErr(stop())
		}
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
			if id == -1 { // the writes are over
				want = itemsOf(t, conn)
			}
		}
	}
	nothingMore(t, s)
}

// itemsWriter is a workload on items (id int, n int), which ends with the
// row -1.
var itemsWriter = workload{
	update: `UPDATE items SET n = n + 1 WHERE id = $1`,
	delete: `DELETE FROM items WHERE id = $1`,
	insert: `INSERT INTO items VALUES ($1, 1)`,
	end:    `INSERT INTO items VALUES (-1, -1)`,
}

// writeItems updates, deletes and inserts rows of items, ending with the
// row -1, and returns a function that waits for the writes to end.
func writeItems(t *testing.T, url string) (wait func() error) {
	writer, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	var werr error
	go func() {
		defer wg.Done()
		defer writer.Close(context.Background())
		for i := 1; i <= 300 && werr == nil; i++ {
			_, werr = writer.Exec(context.Background(), `
				UPDATE items SET n = n + 1 WHERE id = $1 OR id = 20001 - $1;
				DELETE FROM items WHERE id = 10000 + $1;
				INSERT INTO items VALUES (20000 + $1, $1)`, i*13)
		}
		_, werr = writer.Exec(context.Background(), `INSERT INTO items VALUES (-1, -1)`) // the last write
	}()
	t.Cleanup(wg.Wait)
	return func() error {
		wg.Wait()
		return werr
	}
}

// itemsOf returns the rows of items, n by id.
func itemsOf(t *testing.T, conn *pgx.Conn) map[int64]int64 { return nByID(t, conn, "items") }

// nByID returns the rows (id, n) of table, n by id.
func nByID(t *testing.T, conn *pgx.Conn, table string) map[int64]int64 {
	t.Helper()
	rows := map[int64]int64{}
	rs, err := conn.Query(t.Context(), `SELECT id, n FROM `+table)
	if err != nil {
		t.Fatal(err)
	}
	var id, n int64
	if _, err := pgx.ForEachRow(rs, []any{&id, &n}, func() error { rows[id] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	return rows
}
