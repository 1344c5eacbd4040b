package destination

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/internal/metrics/metricstest"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// keylessTable has no primary key, a column that is often NULL, and
// columns whose types have no equality operator (json, point, xml).
const keylessTable = `CREATE TABLE things (n int, label text, doc json, at point, x xml)`

// change is a record of a table without a key, as a postgres source
// sends one read with REPLICA IDENTITY FULL: no key, the new row, and the
// whole old row on updates and deletes.
func change(pos string, op sdk.Operation, before, after sdk.StructuredData) sdk.Record {
	r := sdk.Record{Position: sdk.Position(pos), Operation: op, Metadata: sdk.Metadata{sdk.MetadataCollection: "things"}}
	if before != nil {
		r.Payload.Before = before
	}
	if after != nil {
		r.Payload.After = after
	}
	return r
}

// thing is a row of keylessTable.
func thing(n int, label any) sdk.StructuredData {
	return sdk.StructuredData{"n": n, "label": label, "doc": `{"b": 1,  "a": [2]}`, "at": "(1.5,2)", "x": "<a>1</a>"}
}

func TestKeylessChangesOneRowEach(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, keylessTable, nil)
	// Inserted, then changed in the same batch: each change finds the row
	// the records before it left, and changes one of equal rows.
	n, err := d.Write(t.Context(), []sdk.Record{
		change("1", sdk.OperationSnapshot, nil, thing(1, "x")),
		change("2", sdk.OperationSnapshot, nil, thing(1, "x")),
		change("3", sdk.OperationCreate, nil, thing(1, "x")),
		change("4", sdk.OperationCreate, nil, thing(2, nil)),
		change("5", sdk.OperationCreate, nil, thing(3, "y")),
		change("6", sdk.OperationUpdate, thing(1, "x"), thing(1, "z")),
		change("7", sdk.OperationDelete, thing(1, "x"), nil),
		change("8", sdk.OperationUpdate, thing(2, nil), thing(2, "was null")),
		change("9", sdk.OperationUpdate, thing(1, "z"), thing(4, "z")),
		change("10", sdk.OperationDelete, thing(3, "y"), nil),
	})
	is.NoErr(err)
	is.Equal(n, 10)
	is.Equal(pgtest.Rows(t, conn, `SELECT n, label, doc::text, at::text, x::text FROM things ORDER BY n`), []string{
		`1|x|{"b": 1,  "a": [2]}|(1.5,2)|<a>1</a>`,
		`2|was null|{"b": 1,  "a": [2]}|(1.5,2)|<a>1</a>`,
		`4|z|{"b": 1,  "a": [2]}|(1.5,2)|<a>1</a>`,
	})
}

// An update whose old row is not there inserts its new row; a delete
// changes nothing; each is logged and counted.
func TestKeylessRowNotFoundIsLoggedAndCounted(t *testing.T) {
	is := is.New(t)
	url, conn := server.Database(t, keylessTable+`; INSERT INTO things (n, label) VALUES (1, 'a')`)
	ctx, address := served(t)
	var log bytes.Buffer
	ctx = sdk.ContextWithLogger(ctx, slog.New(slog.NewTextHandler(&log, nil)))
	dst, err := sdk.NewDestination(New).New(map[string]string{"url": url})
	is.NoErr(err)
	t.Cleanup(func() { dst.Teardown(context.Background()) })
	is.NoErr(dst.Open(ctx))
	d := dst.(*Destination)
	n, err := d.Write(ctx, []sdk.Record{
		change("u1", sdk.OperationUpdate, sdk.StructuredData{"n": 9, "label": "a"}, sdk.StructuredData{"n": 10, "label": "b"}),
		change("d1", sdk.OperationDelete, sdk.StructuredData{"n": 1, "label": nil}, nil), // 'a' is not NULL
		change("d2", sdk.OperationDelete, sdk.StructuredData{"n": 1, "label": "a"}, nil),
	})
	is.NoErr(err)
	is.Equal(n, 3)
	is.Equal(pgtest.Rows(t, conn, `SELECT n, label FROM things`), []string{"10|b"}) // the update's new row, as an upsert
	for _, pos := range []string{`\"u1\"`, `\"d1\"`} {
		if !strings.Contains(log.String(), pos) || !strings.Contains(log.String(), "has no row equal to the record's payload.before") {
			t.Errorf("no warning names the record at %s:\n%s", pos, log.String())
		}
	}
	is.Equal(strings.Count(log.String(), "level=WARN"), 2)
	for _, c := range []struct {
		label string
		want  float64
	}{{"operation=update", 1}, {"operation=delete", 1}} {
		if got := metricstest.Sample(t, address, "connkit_postgres_rows_not_found_total", c.label); got != c.want {
			t.Errorf("rows not found, %s = %v, want %v", c.label, got, c.want)
		}
	}
	if got := metricstest.Sample(t, address, "connkit_postgres_rows_total", "operation=delete"); got != 1 {
		t.Errorf("rows deleted = %v, want 1", got)
	}
	if got := metricstest.Sample(t, address, "connkit_postgres_rows_total", "operation=update"); got != 1 {
		t.Errorf("rows updated = %v, want 1", got)
	}
}

func TestKeylessFailuresNameTheirRecord(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, keylessTable+`; INSERT INTO things (n) VALUES (1), (2)`, nil)
	n, err := d.Write(t.Context(), []sdk.Record{
		change("1", sdk.OperationDelete, sdk.StructuredData{"n": 1}, nil),
		change("2", sdk.OperationDelete, sdk.StructuredData{"n": "two"}, nil),
		change("3", sdk.OperationDelete, sdk.StructuredData{"n": 2}, nil),
	})
	is.Equal(n, 1)
	is.True(sdk.IsRecordFault(err))
	is.True(strings.Contains(err.Error(), `record at position "2"`))
	is.True(strings.Contains(err.Error(), `column "n" (integer)`))
	is.Equal(pgtest.Rows(t, conn, `SELECT n FROM things`), []string{"2"})

	// A delete with neither a key nor an old row cannot be applied.
	n, err = d.Write(t.Context(), []sdk.Record{change("4", sdk.OperationDelete, nil, nil)})
	is.Equal(n, 0)
	is.True(sdk.IsRecordFault(err))
	is.True(strings.Contains(err.Error(), "payload.before"))

	// Nor an update with an old row and no new one.
	n, err = d.Write(t.Context(), []sdk.Record{change("5", sdk.OperationUpdate, sdk.StructuredData{"n": 2}, sdk.StructuredData{})})
	is.Equal(n, 0)
	is.True(sdk.IsRecordFault(err))
	is.True(strings.Contains(err.Error(), `record at position "5"`))
	is.True(strings.Contains(err.Error(), "payload.after"))
	is.Equal(pgtest.Rows(t, conn, `SELECT n FROM things`), []string{"2"})
}

func TestKeylessLongRunsInOrder(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, keylessTable, nil)
	var records []sdk.Record
	for i := range 150 { // as many as would go through COPY
		records = append(records, change(fmt.Sprint("c", i), sdk.OperationCreate, nil, sdk.StructuredData{"n": i % 3}))
	}
	for i := range 150 {
		records = append(records, change(fmt.Sprint("u", i), sdk.OperationUpdate, sdk.StructuredData{"n": i % 3}, sdk.StructuredData{"n": 10 + i%3}))
	}
	for i := range 120 {
		records = append(records, change(fmt.Sprint("d", i), sdk.OperationDelete, sdk.StructuredData{"n": 10 + i%3}, nil))
	}
	n, err := d.Write(t.Context(), records)
	is.NoErr(err)
	is.Equal(n, len(records))
	is.Equal(pgtest.Rows(t, conn, `SELECT n, count(*) FROM things GROUP BY n ORDER BY n`), []string{"10|10", "11|10", "12|10"})
}

func TestKeylessExactlyOnceReplay(t *testing.T) {
	is := is.New(t)
	t.Setenv(pconnector.EnvConduitConnectorID, "pipeline:destination")
	conn, d := setup(t, keylessTable, map[string]string{"exactlyOnce.enabled": "true"})
	records := []sdk.Record{
		change("1", sdk.OperationCreate, nil, thing(1, "x")),
		change("2", sdk.OperationCreate, nil, thing(1, "x")),
		change("3", sdk.OperationCreate, nil, thing(1, "x")),
		change("4", sdk.OperationDelete, thing(1, "x"), nil),
		change("5", sdk.OperationUpdate, thing(1, "x"), thing(1, "y")),
	}
	n, err := d.Write(t.Context(), records)
	is.NoErr(err)
	is.Equal(n, 5)
	// Replayed after a restart: an equal row is left for each change, which
	// a second application would delete or update.
	n, err = reopen(t, d).Write(t.Context(), append(records[3:], change("6", sdk.OperationDelete, thing(1, "y"), nil)))
	is.NoErr(err)
	is.Equal(n, 3)
	is.Equal(pgtest.Rows(t, conn, `SELECT n, label FROM things`), []string{"1|x"})
}

func TestKeylessTableCreatedWithoutKey(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, ``, nil)
	described := `[{"name":"n","type":"integer"},{"name":"label","type":"character varying(10)"}]`
	withColumns := func(r sdk.Record) sdk.Record {
		r.Metadata[pg.ColumnsKey] = described
		return r
	}
	n, err := d.Write(t.Context(), []sdk.Record{
		withColumns(change("1", sdk.OperationSnapshot, nil, sdk.StructuredData{"n": 1, "label": "a"})),
		withColumns(change("2", sdk.OperationSnapshot, nil, sdk.StructuredData{"n": 1, "label": "a"})),
		withColumns(change("3", sdk.OperationUpdate, sdk.StructuredData{"n": 1, "label": "a"}, sdk.StructuredData{"n": 2, "label": "b"})),
	})
	is.NoErr(err)
	is.Equal(n, 3)
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*) FROM pg_constraint WHERE conrelid = 'things'::regclass`), []string{"0"})
	is.Equal(pgtest.Rows(t, conn, `SELECT n, label FROM things ORDER BY n`), []string{"1|a", "2|b"})
}

func TestKeylessChangesFindTheirRowByAnIndex(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE TABLE things (n int, label text); CREATE INDEX ON things (n);
		INSERT INTO things SELECT g, 'a' FROM generate_series(1, 10000) g; ANALYZE things`, nil)
	tbl, err := d.table(t.Context(), "things", 0)
	is.NoErr(err)
	r := &run{table: tbl, class: deleteOne, match: []string{"label", "n"}}
	for _, n := range []any{"5", nil} {
		plan := strings.Join(pgtest.Rows(t, conn, fmt.Sprintf("EXPLAIN %s", strings.ReplaceAll(strings.ReplaceAll(r.statementEach(nil), "$1", "'a'"), "$2", sqlLiteral(n)))), "\n")
		if !strings.Contains(plan, "things_n_idx") {
			t.Errorf("n = %v: the row is not found by the index:\n%s", n, plan)
		}
	}
}

// sqlLiteral is v as an SQL literal: NULL for nil.
func sqlLiteral(v any) string {
	if v == nil {
		return "NULL"
	}
	return fmt.Sprintf("'%v'", v)
}

func TestKeylessTypesWithoutEqualityComparedAsText(t *testing.T) {
	is := is.New(t)
	_, d := setup(t, `CREATE TYPE mood AS ENUM ('ok'); CREATE DOMAIN doc AS json; CREATE DOMAIN num AS int;
		CREATE TYPE pair AS (a int, b int);
		CREATE TABLE kinds (i int, v varchar(5), c cidr, jb jsonb, ia int[], m mood, r int4range, n num,
			j json, p point, pa point[], d doc, x xml, b box, pr pair)`, nil)
	tbl, err := d.table(t.Context(), "kinds", 0)
	is.NoErr(err)
	text, err := d.textCompared(t.Context(), tbl)
	is.NoErr(err)
	is.Equal(text, map[string]bool{"j": true, "p": true, "pa": true, "d": true, "x": true, "b": true, "pr": true})
}
