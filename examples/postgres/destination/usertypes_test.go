package destination

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// typed is a record of table t carrying the columns cols and the types
// types, as the postgres source's records do.
func typed(pos string, cols, types string, key, after sdk.StructuredData) sdk.Record {
	r := described(pos, sdk.OperationCreate, cols, key, after)
	r.Metadata[pg.TypesKey] = types
	return r
}

// TestUserTypesCreated: the user types a record's postgres.types
// describes are created before the table that needs them, each after the
// types it is made of (an enum, a domain over int with NOT NULL, a default
// and a check, a domain over the enum, a composite type holding the enum,
// an array of the enum); a type the database has is left as it is; the
// columns get their defaults, at create and when added, where the rows
// already there take the default.
func TestUserTypesCreated(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE DOMAIN mine AS int CHECK (VALUE > -10)`, nil)
	buf, lines := logged(t)
	ctx := sdk.ContextWithLogger(t.Context(), slog.New(slog.NewTextHandler(buf, nil)))
	types := `[{"name":"stat","kind":"enum","labels":["new","it's"]},` +
		`{"name":"posint","kind":"domain","base":"integer","notNull":true,"checks":["CHECK ((VALUE > 0))"],"default":"1"},` +
		`{"name":"statd","kind":"domain","base":"stat","checks":["CHECK ((VALUE <> 'it''s'::stat))"]},` +
		`{"name":"addr","kind":"composite","fields":[{"name":"street","type":"text"},{"name":"Status","type":"stat"}]},` +
		`{"name":"mine","kind":"domain","base":"integer","checks":["CHECK ((VALUE > 0))"]}]`
	cols := `[{"name":"id","type":"integer","notNull":true,"key":1},{"name":"name","type":"text","default":"'anon'::text"},` +
		`{"name":"s","type":"stat","default":"'new'::stat"},{"name":"p","type":"posint"},{"name":"sd","type":"statd"},` +
		`{"name":"a","type":"addr"},{"name":"tags","type":"stat[]"},{"name":"m","type":"mine"}]`
	n, err := d.Write(ctx, []sdk.Record{
		typed("1", cols, types, sdk.StructuredData{"id": int64(1)}, sdk.StructuredData{"id": int64(1), "name": "x", "s": "it's", "p": int64(5), "sd": "new", "a": `(main,"it's")`, "tags": `{new,"it's"}`, "m": int64(-5)}),
		typed("2", cols, types, sdk.StructuredData{"id": int64(2)}, sdk.StructuredData{"id": int64(2), "p": int64(1)}),
	})
	is.NoErr(err)
	is.Equal(n, 2)
	is.Equal(columnTypes(t, conn, "t"), []string{"id integer not null", "name text", "s stat", "p posint", "sd statd", "a addr", "tags stat[]", "m mine"})
	is.Equal(pgtest.Rows(t, conn, `SELECT t::text FROM t ORDER BY id`), []string{`(1,x,it's,5,new,"(main,it's)","{new,it's}",-5)`, `(2,anon,new,1,,,,)`})
	is.Equal(pgtest.Rows(t, conn, `SELECT enum_range(NULL::stat)::text, pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 't'::regclass ORDER BY adnum`),
		[]string{`{new,it's}|'anon'::text`, `{new,it's}|'new'::stat`})
	is.Equal(pgtest.Rows(t, conn, `SELECT typname || ' ' || format_type(typbasetype, typtypmod) || ' ' || typnotnull || ' ' || coalesce(typdefault, '-') || ' ' ||
		(SELECT string_agg(pg_get_constraintdef(c.oid), ',') FROM pg_constraint c WHERE c.contypid = t.oid) FROM pg_type t WHERE typtype = 'd' AND typnamespace = 'public'::regnamespace ORDER BY typname`),
		[]string{"mine integer false - CHECK ((VALUE > '-10'::integer))", "posint integer true 1 CHECK ((VALUE > 0))", "statd stat false - CHECK ((VALUE <> 'it''s'::stat))"})
	is.Equal(lines(), []string{
		`"postgres: CREATE TYPE stat AS ENUM ('new', 'it''s')"`,
		`"postgres: CREATE DOMAIN posint AS integer DEFAULT 1 NOT NULL CHECK ((VALUE > 0))"`,
		`"postgres: CREATE DOMAIN statd AS stat CHECK ((VALUE <> 'it''s'::stat))"`,
		`"postgres: CREATE TYPE addr AS (\"street\" text, \"Status\" stat)"`,
		`"postgres: CREATE TABLE IF NOT EXISTS \"t\" (\"id\" integer NOT NULL, \"name\" text DEFAULT 'anon'::text, \"s\" stat DEFAULT 'new'::stat, \"p\" posint, \"sd\" statd, \"a\" addr, \"tags\" stat[], \"m\" mine, PRIMARY KEY (\"id\"))"`,
	})

	// A column added with its default: the rows there take it, as at the
	// source, where ADD COLUMN … DEFAULT gave them the value without a change.
	cols2 := strings.TrimSuffix(cols, "]") + `,{"name":"discount","type":"numeric(5,2)","default":"0"}]`
	_, err = d.Write(ctx, []sdk.Record{typed("3", cols2, types, sdk.StructuredData{"id": int64(3)}, sdk.StructuredData{"id": int64(3), "p": int64(3), "discount": "1.5"})})
	is.NoErr(err)
	is.Equal(pgtest.Rows(t, conn, `SELECT id || ' ' || discount FROM t ORDER BY id`), []string{"1 0.00", "2 0.00", "3 1.50"})
	is.Equal(lines()[5], `"postgres: ALTER TABLE \"t\" ADD COLUMN IF NOT EXISTS \"discount\" numeric(5,2) DEFAULT 0"`)
}

// TestEnumLabelsAdded: labels added to an enum at the source are added at
// the destination in the source's order, before or after their
// neighbours; labels only the destination has stay.
func TestEnumLabelsAdded(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, ``, nil)
	buf, lines := logged(t)
	ctx := sdk.ContextWithLogger(t.Context(), slog.New(slog.NewTextHandler(buf, nil)))
	cols := `[{"name":"id","type":"integer","notNull":true,"key":1},{"name":"s","type":"stat"}]`
	write := func(pos, labels, value string) {
		t.Helper()
		_, err := d.Write(ctx, []sdk.Record{typed(pos, cols, `[{"name":"stat","kind":"enum","labels":`+labels+`}]`,
			sdk.StructuredData{"id": pos}, sdk.StructuredData{"s": value})})
		is.NoErr(err)
	}
	write("1", `["new","paid"]`, "new")
	write("2", `["new","held","paid"]`, "held")
	write("3", `["first","new","held","paid","last"]`, "first")
	pgtest.Exec(t, conn, `ALTER TYPE stat ADD VALUE 'mine'`)
	write("4", `["first","new","held","paid","last","x"]`, "x")
	is.Equal(pgtest.Rows(t, conn, `SELECT enum_range(NULL::stat)::text`), []string{"{first,new,held,paid,last,x,mine}"})
	is.Equal(pgtest.Rows(t, conn, `SELECT s FROM t ORDER BY s`), []string{"first", "new", "held", "x"})
	is.Equal(lines()[2:], []string{
		`"postgres: ALTER TYPE stat ADD VALUE IF NOT EXISTS 'held' AFTER 'new'"`,
		`"postgres: ALTER TYPE stat ADD VALUE IF NOT EXISTS 'first' BEFORE 'new'"`,
		`"postgres: ALTER TYPE stat ADD VALUE IF NOT EXISTS 'last' AFTER 'paid'"`,
		`"postgres: ALTER TYPE stat ADD VALUE IF NOT EXISTS 'x' AFTER 'last'"`,
	})
}

// TestUserTypeCreatedElsewhere: a type another writer created between the
// planning of its CREATE and the statement is taken as made, and the
// records are planned again; the other statements of the change are not
// made, and the table is not changed.
func TestUserTypeCreatedElsewhere(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE TYPE stat AS ENUM ('new')`, nil)
	change := &schemaChange{table: "t", after: d.changes, kinds: []string{"create_type", "create_type"},
		stmts: []string{`CREATE TYPE grade AS ENUM ('a')`, `CREATE TYPE stat AS ENUM ('new')`}}
	made, err := d.apply(t.Context(), change)
	is.NoErr(err)
	is.True(made)
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*) FROM pg_type WHERE typname = 'grade'`), []string{"0"})

	// A record that needs the type is written.
	cols := `[{"name":"id","type":"integer","notNull":true,"key":1},{"name":"s","type":"stat"}]`
	_, err = d.Write(t.Context(), []sdk.Record{typed("1", cols, `[{"name":"stat","kind":"enum","labels":["new"]}]`, sdk.StructuredData{"id": 1}, sdk.StructuredData{"s": "new"})})
	is.NoErr(err)
	is.Equal(pgtest.Rows(t, conn, `SELECT s::text FROM t`), []string{"new"})
}
