package destination

import (
	"bytes"
	"log/slog"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// described is a record of table t carrying the columns cols, as the
// postgres source's records do.
func described(pos string, op sdk.Operation, cols string, key, after sdk.StructuredData) sdk.Record {
	r := rec(pos, op, key, after)
	r.Metadata.SetCollection("t")
	r.Metadata[pg.ColumnsKey] = cols
	return r
}

// columnTypes returns table's columns as name type [not null], in order.
func columnTypes(t *testing.T, conn *pgx.Conn, table string) []string {
	t.Helper()
	return pgtest.Rows(t, conn, `SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
		FROM pg_attribute a WHERE a.attrelid = '`+table+`'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`)
}

// logged returns a context whose connector log is the returned buffer.
func logged(t *testing.T) (*bytes.Buffer, func() []string) {
	var buf bytes.Buffer
	return &buf, func() []string {
		var out []string
		for _, l := range strings.Split(buf.String(), "\n") {
			if i := strings.Index(l, "msg="); i >= 0 {
				out = append(out, l[i+4:])
			}
		}
		return out
	}
}

// TestCreateTableFromColumns: a table the records name is created with
// the columns, types, NOT NULL and primary key their postgres.columns
// give, once, and logged with its statement.
func TestCreateTableFromColumns(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE TYPE mood AS ENUM ('ok', 'meh')`, nil)
	buf, lines := logged(t)
	ctx := sdk.ContextWithLogger(t.Context(), slog.New(slog.NewTextHandler(buf, nil)))
	cols := `[{"name":"b","type":"integer","notNull":true,"key":2},{"name":"a","type":"character varying(20)","notNull":true,"key":1},` +
		`{"name":"price","type":"numeric(40,10)"},{"name":"tags","type":"text[]"},{"name":"doc","type":"jsonb"},{"name":"m","type":"mood"},` +
		`{"name":"at","type":"timestamp(3) with time zone"},{"name":"Odd Name","type":"bit varying(5)"}]`
	n, err := d.Write(ctx, []sdk.Record{
		described("1", sdk.OperationSnapshot, cols, sdk.StructuredData{"a": "x", "b": int64(1)},
			sdk.StructuredData{"a": "x", "b": int64(1), "price": "12345678901234567890.0123456789", "tags": `{a,NULL}`, "doc": `{"n": 12345678901234567890123}`, "m": "meh", "at": nil, "Odd Name": "101"}),
		described("2", sdk.OperationSnapshot, cols, sdk.StructuredData{"a": "y", "b": int64(2)}, sdk.StructuredData{"a": "y", "b": int64(2)}),
	})
	is.NoErr(err)
	is.Equal(n, 2)
	is.Equal(columnTypes(t, conn, "t"), []string{
		"b integer not null", "a character varying(20) not null", "price numeric(40,10)", "tags text[]", "doc jsonb", "m mood",
		"at timestamp(3) with time zone", "Odd Name bit varying(5)"})
	is.Equal(pgtest.Rows(t, conn, `SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM pg_index i CROSS JOIN unnest(i.indkey) WITH ORDINALITY k(n, ord)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n WHERE i.indrelid = 't'::regclass AND i.indisprimary`), []string{"a,b"})
	is.Equal(pgtest.Rows(t, conn, `SELECT a, b, price::text, tags::text, doc::text, m FROM t ORDER BY a`), []string{
		"x|1|12345678901234567890.0123456789|{a,NULL}|{\"n\": 12345678901234567890123}|meh",
		"y|2|<nil>|<nil>|<nil>|<nil>"})
	is.Equal(lines(), []string{`"postgres: CREATE TABLE IF NOT EXISTS \"t\" (\"b\" integer NOT NULL, \"a\" character varying(20) NOT NULL, \"price\" numeric(40,10), \"tags\" text[], \"doc\" jsonb, \"m\" mood, \"at\" timestamp(3) with time zone, \"Odd Name\" bit varying(5), PRIMARY KEY (\"a\", \"b\"))"`})
}

// TestCreateTableFromValues: without postgres.columns, the types follow
// the values: what a schema's decoder gives, or the protocol's doubles
// and strings.
func TestCreateTableFromValues(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, ``, nil)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := rec("1", sdk.OperationCreate, sdk.StructuredData{"id": int64(7)}, sdk.StructuredData{
		"i32": int32(1), "i64": int64(2), "f32": float32(1.5), "f64": 2.5, "s": "x", "ok": true, "at": at, "d": 90 * time.Minute,
		"raw": []byte{1, 2}, "dec": big.NewRat(1, 4), "doc": map[string]any{"a": 1.0}, "list": []any{"a"}, "none": nil,
	})
	r.Metadata.SetCollection("t")
	_, err := d.Write(t.Context(), []sdk.Record{r})
	is.NoErr(err)
	is.Equal(columnTypes(t, conn, "t"), []string{
		"id bigint not null", "at timestamp with time zone", "d interval", "dec numeric", "doc jsonb", "f32 real", "f64 double precision",
		"i32 integer", "i64 bigint", "list jsonb", "none text", "ok boolean", "raw bytea", "s text"})
	is.Equal(pgtest.Rows(t, conn, `SELECT id, d::text, dec::text, doc::text, raw FROM t`), []string{`7|01:30:00|0.25|{"a": 1}|[1 2]`})
}

// TestEvolve: the table follows the records: a column added, one renamed
// (the records before the rename in the same batch written to its old
// name), a widened one, a type the source changed, a dropped one left in
// place; each change logged once.
func TestEvolve(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, ``, nil)
	buf, lines := logged(t)
	ctx := sdk.ContextWithLogger(t.Context(), slog.New(slog.NewTextHandler(buf, nil)))
	id := `{"name":"id","type":"integer","notNull":true,"key":1}`
	v1 := `[` + id + `,{"name":"a","type":"character varying(20)"},{"name":"n","type":"integer"},{"name":"gone","type":"text"}]`
	v2 := `[` + id + `,{"name":"a2","type":"character varying(20)","was":"a"},{"name":"n","type":"integer"},{"name":"gone","type":"text"},{"name":"c","type":"numeric(10,2)"}]`
	v3 := `[` + id + `,{"name":"a2","type":"character varying(200)","was":"a"},{"name":"n","type":"text"},{"name":"c","type":"numeric(10,2)"}]`
	k := func(i int64) sdk.StructuredData { return sdk.StructuredData{"id": i} }
	n, err := d.Write(ctx, []sdk.Record{
		described("1", sdk.OperationCreate, v1, k(1), sdk.StructuredData{"id": int64(1), "a": "one", "n": int64(1), "gone": "g"}),
		described("2", sdk.OperationCreate, v1, k(2), sdk.StructuredData{"id": int64(2), "a": "two", "n": int64(2), "gone": "g"}),
		described("3", sdk.OperationCreate, v2, k(3), sdk.StructuredData{"id": int64(3), "a2": "three", "n": int64(3), "gone": "g", "c": "3.50"}),
		described("4", sdk.OperationUpdate, v3, k(1), sdk.StructuredData{"id": int64(1), "a2": strings.Repeat("x", 150), "n": "one", "c": nil}),
		described("5", sdk.OperationCreate, v3, k(5), sdk.StructuredData{"id": int64(5), "a2": "five", "n": "five", "c": "5"}),
	})
	is.NoErr(err)
	is.Equal(n, 5)
	is.Equal(columnTypes(t, conn, "t"), []string{"id integer not null", "a2 character varying(200)", "n text", "gone text", "c numeric(10,2)"})
	is.Equal(pgtest.Rows(t, conn, `SELECT id, length(a2), n, gone, c::text FROM t ORDER BY id`), []string{
		"1|150|one|g|<nil>", "2|3|2|g|<nil>", "3|5|3|g|3.50", "5|4|five|<nil>|5.00"})
	is.Equal(lines(), []string{
		`"postgres: CREATE TABLE IF NOT EXISTS \"t\" (\"id\" integer NOT NULL, \"a\" character varying(20), \"n\" integer, \"gone\" text, PRIMARY KEY (\"id\"))"`,
		`"postgres: ALTER TABLE \"t\" RENAME COLUMN \"a\" TO \"a2\""`,
		`"postgres: ALTER TABLE \"t\" ADD COLUMN IF NOT EXISTS \"c\" numeric(10,2)"`,
		`"postgres: ALTER TABLE \"t\" ALTER COLUMN \"a2\" TYPE character varying(200) USING \"a2\"::character varying(200)"`,
		`"postgres: ALTER TABLE \"t\" ALTER COLUMN \"n\" TYPE text USING \"n\"::text"`,
	})

	// A record without the column the source added, from another source:
	// the column stays, NULL.
	r := rec("6", sdk.OperationCreate, k(6), sdk.StructuredData{"id": int64(6), "extra": 1.5})
	r.Metadata.SetCollection("t")
	_, err = d.Write(ctx, []sdk.Record{r})
	is.NoErr(err)
	is.Equal(columnTypes(t, conn, "t")[5], "extra double precision")
}

// TestHandMadeTypesKept: a table made by hand keeps its types where they
// take the source's values, and is widened where they are too narrow.
func TestHandMadeTypesKept(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE TABLE t (id bigint PRIMARY KEY, a text, b varchar(5), n numeric)`, nil)
	cols := `[{"name":"id","type":"integer","notNull":true,"key":1},{"name":"a","type":"character varying(20)"},{"name":"b","type":"character varying(20)"},{"name":"n","type":"numeric(10,2)"}]`
	_, err := d.Write(t.Context(), []sdk.Record{described("1", sdk.OperationCreate, cols, sdk.StructuredData{"id": int64(1)}, sdk.StructuredData{"a": "a", "b": "bbbbbbbbbb", "n": "1.5"})})
	is.NoErr(err)
	is.Equal(columnTypes(t, conn, "t"), []string{"id bigint not null", "a text", "b character varying(20)", "n numeric"})
}

// TestTypeMissingAtDestination: a type the destination database lacks is
// a clear error that names the column and the fix, and nothing is made.
func TestTypeMissingAtDestination(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, ``, nil)
	cols := `[{"name":"id","type":"integer","notNull":true,"key":1},{"name":"m","type":"mood"}]`
	n, err := d.Write(t.Context(), []sdk.Record{described("1", sdk.OperationCreate, cols, sdk.StructuredData{"id": int64(1)}, sdk.StructuredData{"m": "ok"})})
	is.Equal(n, 0)
	is.True(err != nil)
	is.Equal(err.Error(), `record at position "1": table t: column "m" has type mood, which the destination database does not have: create it there as it is at the source (an enum, a domain or a composite type: CREATE TYPE …; an extension's: CREATE EXTENSION …), or create the table yourself`)
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*) FROM pg_class WHERE relname = 't'`), []string{"0"})

	bad := `[{"name":"id","type":"integer); DROP TABLE x; --","key":1}]`
	_, err = d.Write(t.Context(), []sdk.Record{described("2", sdk.OperationCreate, bad, sdk.StructuredData{"id": int64(1)}, nil)})
	is.True(err != nil && strings.Contains(err.Error(), `column "id": "integer); DROP TABLE x; --" is not a type name`))
}

// TestSchemaChangePrivileges: a role that may not create or alter the
// table gets the message that names the privilege.
func TestSchemaChangePrivileges(t *testing.T) {
	is := is.New(t)
	url, conn := server.Database(t, `CREATE TABLE owned (id int PRIMARY KEY)`)
	role := "writer_" + url[strings.LastIndex(url, "/")+1:strings.Index(url, "?")]
	pgtest.Exec(t, conn, `CREATE ROLE `+role+` LOGIN; GRANT INSERT, UPDATE, SELECT ON owned TO `+role)
	t.Cleanup(func() { conn.Exec(t.Context(), `DROP OWNED BY `+role+`; DROP ROLE `+role) })
	d, err := New(Config{URL: strings.Replace(url, "postgres@", role+"@", 1)})
	is.NoErr(err)
	d.cfg.Auto.Create, d.cfg.Auto.Evolve = true, true
	is.NoErr(d.Open(t.Context()))
	defer d.Teardown(t.Context())

	r := rec("1", sdk.OperationCreate, sdk.StructuredData{"id": int64(1)}, nil)
	r.Metadata.SetCollection("fresh")
	_, err = d.Write(t.Context(), []sdk.Record{r})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), `permission denied for schema public`))
	is.True(strings.Contains(err.Error(), `the role needs the CREATE privilege on schema public (GRANT CREATE ON SCHEMA public TO the role), or create the table beforehand, or set auto.create to false`))

	r = rec("2", sdk.OperationCreate, sdk.StructuredData{"id": int64(1)}, sdk.StructuredData{"extra": "x"})
	r.Metadata.SetCollection("owned")
	_, err = d.Write(t.Context(), []sdk.Record{r})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), `ALTER TABLE "owned" ADD COLUMN IF NOT EXISTS "extra" text: must be owner of table owned`))
	is.True(strings.Contains(err.Error(), `only the table's owner may alter it (ALTER TABLE owned OWNER TO the role), or make the change beforehand, or set auto.evolve to false`))
}
