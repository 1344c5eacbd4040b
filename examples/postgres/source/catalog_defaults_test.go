package source

import (
	"testing"

	"github.com/matryer/is"
)

// TestDefaultsCarried: the source carries the defaults a destination can
// take as they are (constants, casts, built-in functions that are not
// volatile, the column's own user type and what it is made of) and leaves
// out those that read a sequence, are volatile, call a user function or
// name a user object the records do not describe.
func TestDefaultsCarried(t *testing.T) {
	is := is.New(t)
	_, conn := sourceDB(t, `
		CREATE TYPE stat AS ENUM ('new', 'paid');
		CREATE TYPE other AS ENUM ('x');
		CREATE DOMAIN open_stat AS stat DEFAULT 'new' CHECK (VALUE <> 'paid');
		CREATE TYPE addr AS (street text, status stat);
		CREATE SEQUENCE seq;
		CREATE FUNCTION mine() RETURNS int IMMUTABLE LANGUAGE sql AS 'SELECT 1';
		CREATE COLLATION mycoll (provider = libc, locale = 'C');
		CREATE TABLE t (id int PRIMARY KEY,
			num numeric(5,2) DEFAULT 0, txt varchar(3) DEFAULT 'x', low text DEFAULT lower('X'), sum int DEFAULT 1 + 2,
			at timestamptz DEFAULT now(), ts timestamp DEFAULT CURRENT_TIMESTAMP, d date DEFAULT '2020-01-02', ints int[] DEFAULT '{1,2}',
			s stat DEFAULT 'new', o open_stat DEFAULT 'new'::stat, tags stat[] DEFAULT ARRAY['new'::stat], a addr DEFAULT ROW('main', 'paid'),
			n bigint DEFAULT nextval('seq'), ser serial, r float8 DEFAULT random(), u uuid DEFAULT gen_random_uuid(), f int DEFAULT mine(),
			rel regclass DEFAULT 'seq', c text DEFAULT lower('X' COLLATE mycoll), s2 text DEFAULT 'x'::other::text)`)
	var oid uint32
	is.NoErr(conn.QueryRow(t.Context(), `SELECT 't'::regclass::oid`).Scan(&oid))
	cat, err := readColumnCatalog(t.Context(), conn, oid)
	is.NoErr(err)
	is.Equal(cat.defaults, map[string]string{
		"num": "0", "txt": "'x'::character varying", "low": "lower('X'::text)", "sum": "(1 + 2)",
		"at": "now()", "ts": "CURRENT_TIMESTAMP", "d": "'2020-01-02'::date", "ints": "'{1,2}'::integer[]",
		"s": "'new'::stat", "o": "'new'::stat", "tags": "ARRAY['new'::stat]", "a": "ROW('main'::text, 'paid'::stat)",
	})

	types, err := describeTypes(t.Context(), conn, []string{"o"}, []uint32{cat.oids["o"]})
	is.NoErr(err)
	is.Equal(types.meta, `[{"name":"stat","kind":"enum","labels":["new","paid"]},{"name":"open_stat","kind":"domain","base":"stat","checks":["CHECK ((VALUE <> 'paid'::stat))"],"default":"'new'::stat"}]`)
}
