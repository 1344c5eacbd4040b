package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// matrixTypes are the types of their own that the matrix's columns use;
// the destination database has them too, as a destination cannot make
// them up (an enum's labels, a domain's check).
const matrixTypes = `
	CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
	CREATE DOMAIN posint AS integer CHECK (VALUE > 0);
	CREATE TYPE pair AS (a int, b text);`

// matrixTable has a column of each of 55 types: PostgreSQL's built-in
// scalar types, arrays (multi-dimensional, empty, of an enum), a domain, a
// composite, ranges and a multirange.
const matrixTable = `
	CREATE TABLE matrix (
		id int PRIMARY KEY,
		c_smallint smallint, c_int integer, c_bigint bigint, c_oid oid,
		c_numeric numeric, c_numeric_40_10 numeric(40,10), c_real real, c_double double precision, c_money money,
		c_bool boolean, c_text text, c_varchar varchar(20), c_char char(5), c_char1 "char", c_name name,
		c_bytea bytea, c_uuid uuid, c_json json, c_jsonb jsonb, c_xml xml,
		c_date date, c_time time, c_time3 time(3), c_timetz timetz, c_timestamp timestamp, c_timestamp3 timestamp(3),
		c_timestamptz timestamptz, c_interval interval,
		c_inet inet, c_cidr cidr, c_macaddr macaddr, c_macaddr8 macaddr8,
		c_bit bit(4), c_varbit varbit(8),
		c_point point, c_line line, c_lseg lseg, c_box box, c_path path, c_polygon polygon, c_circle circle,
		c_int4range int4range, c_numrange numrange, c_tstzrange tstzrange, c_daterange daterange, c_int4multirange int4multirange,
		c_tsvector tsvector, c_tsquery tsquery, c_pg_lsn pg_lsn,
		c_mood mood, c_posint posint, c_pair pair,
		c_int_arr int[], c_int_arr2 int[][], c_text_arr text[], c_mood_arr mood[], c_numeric_arr numeric[], c_ts_arr timestamptz[]);`

// matrixRows are the snapshot: ordinary values, a row of NULLs, special
// values (NaN, infinities, -0, BC, extreme numbers, empty and nested
// arrays), TOASTed text and bytea, and JSON whose text and numbers a
// round trip through a double would change.
const matrixRows = `
	INSERT INTO matrix VALUES (1,
		-32768, 2147483647, -9223372036854775808, 4294967295,
		12345678901234567890.123456789012345678901234567890, 123456789012345678901234567890.0123456789, 1.1, 0.1, 1234.56,
		true, 'tab	é 😀 ''quoted''', 'twenty chars exactly', 'ab', 'x', 'a_name',
		'\x00ff80fe', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": 2.50,  "b": [1, 2.0]}', '{"k": "v", "n": 1.0}', '<a b="c">d</a>',
		'2026-01-02', '24:00:00', '12:34:56.789', '12:00:00+05:30', '2026-01-02 03:04:05.123456', '2026-01-02 03:04:05.123',
		'2026-01-02 03:04:05.123456+05:45', '1 year 2 mons -3 days 04:05:06.789',
		'192.168.0.1/24', '10.0.0.0/8', '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05',
		B'1010', B'101',
		'(1.5,-2)', '{1,-1,0}', '[(0,0),(1,1)]', '(2,2),(0,0)', '[(0,0),(1,1),(2,0)]', '((0,0),(1,1),(1,0))', '<(0,0),1.5>',
		'[1,10)', '(1.5,2.25]', '[2026-01-01 00:00:00+00,2026-02-01 00:00:00+00)', '[2026-01-01,2026-01-31)', '{[1,3), [5,8)}',
		'a fat cat:3 sat', 'fat & (rat | cat)', '16/B374D848',
		'happy', 42, '(7,"x y")',
		'{1,NULL,3}', '{{1,2},{3,4}}', '{NULL,"a b","{}",""}', '{sad,ok}', '{1.5,NaN,-0.000001}', '{"2026-01-02 03:04:05.123456+00",NULL}');
	INSERT INTO matrix (id) VALUES (2);
	INSERT INTO matrix VALUES (3,
		0, 0, 9223372036854775807, 0,
		'NaN', 0, '-0', 'Infinity', -92233720368547758.08,
		false, '', '', '', '', '',
		'\x', '00000000-0000-0000-0000-000000000000', '[]', '{}', '',
		'infinity', '00:00:00', '00:00:00', '00:00:00-12:00', '-infinity', '4713-01-01 00:00:00 BC',
		'0044-03-15 12:00:00+00 BC', '-178000000 years',
		'::1', '::/0', '00:00:00:00:00:00', '00:00:00:00:00:00:00:00',
		B'0000', B'',
		'(0,0)', '{0,1,0}', '[(0,0),(0,0)]', '(0,0),(0,0)', '((0,0))', '((0,0))', '<(0,0),0>',
		'empty', 'empty', '(,)', '(,infinity)', '{}',
		'', '', '0/0',
		'sad', 1, '(,)',
		'{}', '{}', '{}', '{}', '{}', '{}');
	INSERT INTO matrix (id, c_numeric, c_real, c_double, c_date, c_timestamptz, c_numeric_arr) VALUES
		(4, '-Infinity', 'NaN', '-Infinity', '-infinity', 'infinity', '{Infinity,-Infinity}');
	INSERT INTO matrix (id, c_real, c_double, c_numeric, c_text, c_bytea) VALUES
		(5, 3.4028235e38, 5e-324, repeat('9', 1000)::numeric / 7, repeat('long text é ', 20000), decode(repeat('00ff10ab', 30000), 'hex'));
	INSERT INTO matrix (id, c_json, c_jsonb, c_real, c_double) VALUES
		(6, '{"big": 12345678901234567890123, "frac": 12345678901234567890.123456789, "exp": 1E+400, "pad":   2.50 }',
		    '{"big": 12345678901234567890123, "frac": 12345678901234567890.123456789, "deep": [[{"x": 1e-400}]]}', 1.4e-45, 1.7976931348623157e308);`

// matrixChanges stream after the snapshot: a copy of each row, an update
// of a row whose TOASTed values it leaves unchanged, updates into special
// values and NULLs, and a delete: 6 inserts, 3 updates, 1 delete.
const matrixChanges = `
	CREATE TEMP TABLE copies AS SELECT * FROM matrix;
	UPDATE copies SET id = id + 100;
	INSERT INTO matrix SELECT * FROM copies ORDER BY id;
	UPDATE matrix SET c_int = 7 WHERE id = 5;
	UPDATE matrix SET c_double = '-0', c_numeric = 'Infinity', c_date = '0001-01-01 BC', c_jsonb = '{"n": 1.000000000000000000001}' WHERE id = 1;
	UPDATE matrix SET c_text = NULL, c_json = NULL WHERE id = 6;
	DELETE FROM matrix WHERE id = 2;`

// TestTypeMatrix copies the matrix from PostgreSQL into an empty database
// (but for the enum, domain and composite type) with connkit's Postgres
// source and destination in real Conduit, both engines, with the SDK's
// schema extraction on and off: the snapshot, then changes. The
// destination creates the table; every column must have the source's
// type and every value, compared as text, the source's.
func TestTypeMatrix(t *testing.T) {
	for _, engine := range engines {
		for _, schemas := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, schemas %s", engine.name, onOff(schemas)), func(t *testing.T) {
				typeMatrix(t, engine.flags, schemas)
			})
		}
	}
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func typeMatrix(t *testing.T, flags []string, schemas bool) {
	is := is.New(t)
	from, src := sourceDatabase(t, matrixTypes+matrixTable)
	if _, err := src.Exec(t.Context(), matrixRows); err != nil {
		t.Fatal(err)
	}
	to, dst := sourceDatabase(t, matrixTypes)
	onOff := fmt.Sprint(schemas)
	source := map[string]string{"url": from, "tables": "matrix", "slot.name": dbName(from),
		"sdk.schema.extract.key.enabled": onOff, "sdk.schema.extract.payload.enabled": onOff}
	c := startConduit(t, pipelineYAML("standalone:postgres", source, "standalone:postgres", map[string]string{"url": to}), flags...)
	c.waitForAcked(6)
	is.Equal(columnTypes(t, dst, "matrix"), columnTypes(t, src, "matrix")) // created with the source's types
	compareValues(t, "after the snapshot", src, dst)

	if _, err := src.Exec(t.Context(), matrixChanges); err != nil {
		t.Fatal(err)
	}
	c.waitForAcked(6 + 6 + 3 + 1)
	compareValues(t, "after the changes", src, dst)
	is.Equal(c.executions("e2e"), float64(6+6+3+1)) // no record twice
	c.stop()
	c.checkProblems()
}

// matrixValues returns every value of the matrix as text, by row ID and
// column name; NULL as "NULL".
func matrixValues(t *testing.T, conn *pgx.Conn) (map[string]map[string]string, []string) {
	t.Helper()
	rows, err := conn.Query(t.Context(), `SELECT a.attname FROM pg_attribute a WHERE a.attrelid = 'matrix'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	exprs := make([]string, len(cols))
	for i, c := range cols {
		exprs[i] = fmt.Sprintf("coalesce(%s::text, 'NULL')", pgx.Identifier{c}.Sanitize())
	}
	rows, err = conn.Query(t.Context(), "SELECT "+strings.Join(exprs, ", ")+" FROM matrix")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for rows.Next() {
		vals := make([]string, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := map[string]string{}
		for i, c := range cols {
			row[c] = vals[i]
		}
		out[row["id"]] = row
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out, cols
}

// compareValues fails the test for each value of the matrix that differs
// between the databases, and for each row one of them lacks.
func compareValues(t *testing.T, when string, src, dst *pgx.Conn) {
	t.Helper()
	want, cols := matrixValues(t, src)
	got, _ := matrixValues(t, dst)
	differ := 0
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			t.Errorf("%s: row %s is missing", when, id)
			continue
		}
		for _, c := range cols {
			if g[c] != w[c] {
				differ++
				t.Errorf("%s: row %s, column %s: got %.200q, want %.200q", when, id, c, g[c], w[c])
			}
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("%s: row %s is extra", when, id)
		}
	}
	if differ == 0 && !t.Failed() {
		t.Logf("%s: %d rows × %d columns equal", when, len(want), len(cols))
	}
}
