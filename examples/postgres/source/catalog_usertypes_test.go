package source

import (
	"context"
	"testing"

	"github.com/connkit/connkit/examples/postgres/destination"
	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// TestUserTypesAndDefaultsCopied copies a table that uses user types and
// defaults through the source into an empty database with the destination,
// snapshot then changes: the records describe the enum, the domains (over
// int, with NOT NULL, a default and a check; over the enum), the composite
// type and the array of the enum the columns use, in an order that creates
// each after what it is made of, and the defaults that the destination
// can take (now(), not nextval). A column added with a default gives the
// rows already copied that default; a label added to the enum while
// streaming, BEFORE another, reaches the destination in its place with the
// first row that uses it. The copy equals the original, row by row, column
// types and enum order included.
func TestUserTypesAndDefaultsCopied(t *testing.T) {
	is := is.New(t)
	url, src := sourceDB(t, `
		CREATE TYPE stat AS ENUM ('new', 'paid');
		CREATE DOMAIN posint AS int NOT NULL DEFAULT 1 CHECK (VALUE > 0);
		CREATE DOMAIN open_stat AS stat CHECK (VALUE <> 'paid');
		CREATE TYPE addr AS (street text, status stat);
		CREATE SEQUENCE seq;
		CREATE TABLE t (id int PRIMARY KEY, name text DEFAULT 'anon', n bigint DEFAULT nextval('seq'), at timestamptz DEFAULT now(),
			s stat DEFAULT 'new', p posint, o open_stat, a addr, tags stat[]);
		INSERT INTO t (id, p, o, a, tags) VALUES (1, 5, 'new', ROW('main', 'paid'), '{new,paid}'), (2, 6, NULL, NULL, '{}')`)
	destURL, dst := server.Database(t, ``)
	s := openSource(t, url, map[string]string{"tables": "t"}, nil)
	copyN := copier(t, s, destURL)
	same := func(query string) {
		t.Helper()
		is.Equal(pgtest.Rows(t, dst, query), pgtest.Rows(t, src, query))
	}

	recs := copyN(2)
	is.Equal(recs[0].Metadata[pg.ColumnsKey], `[{"name":"id","type":"integer","notNull":true,"key":1},{"name":"name","type":"text","default":"'anon'::text"},`+
		`{"name":"n","type":"bigint"},{"name":"at","type":"timestamp with time zone","default":"now()"},{"name":"s","type":"stat","default":"'new'::stat"},`+
		`{"name":"p","type":"posint"},{"name":"o","type":"open_stat"},{"name":"a","type":"addr"},{"name":"tags","type":"stat[]"}]`)
	types := `[{"name":"stat","kind":"enum","labels":["new","paid"]},` +
		`{"name":"posint","kind":"domain","base":"integer","notNull":true,"checks":["CHECK ((VALUE > 0))"],"default":"1"},` +
		`{"name":"open_stat","kind":"domain","base":"stat","checks":["CHECK ((VALUE <> 'paid'::stat))"]},` +
		`{"name":"addr","kind":"composite","fields":[{"name":"street","type":"text"},{"name":"status","type":"stat"}]}]`
	is.Equal(recs[0].Metadata[pg.TypesKey], types)

	pgtest.Exec(t, src, `ALTER TABLE t ADD COLUMN discount numeric(5,2) DEFAULT 0`)
	pgtest.Exec(t, src, `INSERT INTO t (id, p, discount) VALUES (3, 7, 2.5)`)
	recs = copyN(1)
	is.Equal(recs[0].Metadata[pg.TypesKey], types)

	pgtest.Exec(t, src, `ALTER TYPE stat ADD VALUE 'held' BEFORE 'paid'`)
	pgtest.Exec(t, src, `INSERT INTO t (id, p, s) VALUES (4, 8, 'new')`)
	pgtest.Exec(t, src, `INSERT INTO t (id, p, tags) VALUES (5, 9, '{paid,held}')`)
	pgtest.Exec(t, src, `UPDATE t SET s = 'held' WHERE id = 1`)
	recs = copyN(3)
	is.Equal(recs[0].Metadata[pg.TypesKey], types) // no row had the label yet
	is.Equal(recs[1].Metadata[pg.TypesKey], `[{"name":"stat","kind":"enum","labels":["new","held","paid"]}`+types[len(`[{"name":"stat","kind":"enum","labels":["new","paid"]}`):])
	is.Equal(recs[2].Metadata[pg.TypesKey], recs[1].Metadata[pg.TypesKey])

	same(`SELECT t::text FROM t ORDER BY id`)
	same(`SELECT enum_range(NULL::stat)::text`)
	same(`SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) FROM pg_attribute a WHERE a.attrelid = 't'::regclass AND a.attnum > 0 ORDER BY a.attnum`)
	is.Equal(pgtest.Rows(t, dst, `SELECT discount::text FROM t ORDER BY id`), []string{"0.00", "0.00", "2.50", "0.00", "0.00"})
	is.Equal(pgtest.Rows(t, dst, `SELECT a.attname || ' ' || pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
		WHERE d.adrelid = 't'::regclass ORDER BY d.adnum`), []string{"name 'anon'::text", "at now()", "s 'new'::stat", "discount 0"})
}

// copier returns a function that reads n records from s, writes them to
// the database at url with the destination, and acks them.
func copier(t *testing.T, s *Source, url string) func(n int) []sdk.Record {
	is := is.New(t)
	d, err := sdk.NewDestination(destination.New).New(map[string]string{"url": url})
	is.NoErr(err)
	is.NoErr(d.Open(t.Context()))
	t.Cleanup(func() { d.Teardown(context.Background()) })
	return func(n int) []sdk.Record {
		t.Helper()
		recs := readN(t, s, n)
		written, err := d.Write(t.Context(), recs)
		is.NoErr(err)
		is.Equal(written, n)
		ackAll(t, s, recs)
		return recs
	}
}
