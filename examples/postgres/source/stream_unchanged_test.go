package source

import (
	"context"
	"strings"
	"testing"

	"github.com/connkit/connkit/examples/postgres/destination"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// everyPlane is text with characters from every Unicode plane, the edges
// of each UTF-8 length, a noncharacter, combining marks, a joined emoji,
// right-to-left text, and the characters that arrays and JSON escape.
var everyPlane = func() string {
	var b strings.Builder
	b.WriteString("\u0001\u007f\u0080\u07ff\u0800\ufffd\uffff e\u0301 \U0001F469\u200d\U0001F4BB \u05e9\u05dc\u05d5\u05dd \\ \" ' , { } tab\t nl\n")
	for plane := rune(0); plane <= 16; plane++ {
		b.WriteRune(plane<<16 | 0x4e2d) // a code point of each plane (CJK in plane 0)
		b.WriteRune(plane<<16 | 0xfffd)
	}
	b.WriteRune(0x10ffff)
	return b.String()
}()

// unchangedTable holds values whose text a careless path changes: text of
// every plane, in full-length varchar and char columns; numerics with more
// digits than a double or a decimal(31,10) keeps, trailing zeros and NaN;
// arrays with NULLs, quotes, backslashes, the word NULL, and two
// dimensions; doubles at their limits.
const unchangedTable = `
	CREATE TABLE unchanged (
		id int PRIMARY KEY, t text, vc varchar(3), ch char(3), n numeric, n2 numeric(40,20),
		ta text[], na numeric[], ia int[], d double precision, r real);
	CREATE TABLE unchanged_copy (LIKE unchanged INCLUDING ALL)`

const unchangedRows = `
	INSERT INTO unchanged VALUES
		(1, $1, '中𝄞😀', '𝄞é ', 0.100000000000000000000000000000000000000000000000001, 12345678901234567890.12345678901234567890,
		 '{"a,b","c\"d","e\\f",NULL,"NULL"," spaced ",""}', '{1.10,NaN,-0.000000000000000000000000001}', '{{1,2},{3,NULL}}', 1.7976931348623157e308, 3.4028235e38),
		(2, '', 'a', 'a', 1e-100, -0.00000000000000000001, '{}', '{}', '{}', 5e-324, 1.17549435e-38),
		(3, NULL, NULL, NULL, 'NaN', 99999999999999999999.99999999999999999999, '{{"x y",z}}', NULL, '{-2147483648}', -0.0, 'NaN')`

// TestSourceReadsUnchanged: what the source reads, in the snapshot and in
// changes, is what the table holds, and written back by the destination it
// makes the same rows, value for value.
func TestSourceReadsUnchanged(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	url, conn := sourceDB(t, unchangedTable)
	pgtest.Exec(t, conn, unchangedRows, everyPlane)
	s := openSource(t, url, map[string]string{"tables": "unchanged"}, nil)
	snap := readN(t, s, 3)
	pgtest.Exec(t, conn, `DELETE FROM unchanged`)
	pgtest.Exec(t, conn, unchangedRows, everyPlane)
	changes := readN(t, s, 6)

	d, err := destination.New(destination.Config{URL: url, Table: "unchanged_copy"})
	is.NoErr(err)
	is.NoErr(d.Open(ctx))
	defer d.Teardown(context.Background())
	for name, recs := range map[string][]sdk.Record{"snapshot": snap, "changes": changes[3:]} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			after := recs[0].Payload.After.(sdk.StructuredData)
			is.Equal(after["t"], everyPlane)
			is.Equal(after["vc"], "中𝄞😀")
			is.Equal(after["ch"], "𝄞é ")
			is.Equal(after["n"], "0.100000000000000000000000000000000000000000000000001")
			is.Equal(after["n2"], "12345678901234567890.12345678901234567890")
			is.Equal(after["ta"], `{"a,b","c\"d","e\\f",NULL,"NULL"," spaced ",""}`)
			is.Equal(after["na"], "{1.10,NaN,-0.000000000000000000000000001}")
			is.Equal(after["d"], 1.7976931348623157e308)
			pgtest.Exec(t, conn, `TRUNCATE unchanged_copy`)
			n, err := d.Write(t.Context(), recs)
			is.NoErr(err)
			is.Equal(n, 3)
			is.Equal(pgtest.Rows(t, conn, `SELECT count(*) FROM unchanged u FULL JOIN unchanged_copy c ON u::text = c::text WHERE u.id IS NULL OR c.id IS NULL`), []string{"0"})
		})
	}
}
