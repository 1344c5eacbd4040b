package destination

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// typedTable has a column of each type the typed values go into.
const typedTable = `CREATE TABLE typed (
	id bigint PRIMARY KEY, big bigint, num numeric, raw bytea, tz timestamptz, ts timestamp, day date,
	flag boolean, r real, d double precision, t text, doc jsonb, i int, s smallint, tod time, span interval)`

// typedQuery reads typed back, every column as PostgreSQL's text (in a UTC
// session), bytea as hex.
const typedQuery = `SELECT id::text, big::text, num::text, encode(raw, 'hex'), tz::text, ts::text, day::text,
	flag::text, r::text, d::text, t, doc::text, i::text, s::text, tod::text, span::text FROM typed ORDER BY id`

// A value whose offset is not a whole hour, microseconds and all.
var kathmandu = time.FixedZone("+05:45", 5*3600+45*60)

func rat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return r
}

// typedRows are records whose payloads hold Go types as a schema's decoder
// gives them, and the rows they must become, as typedQuery reads them.
func typedRows() ([]sdk.Record, []string) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, kathmandu)
	recs := []sdk.Record{
		rec("1", sdk.OperationCreate, sdk.StructuredData{"id": int64(1)}, sdk.StructuredData{
			"big": int64(9007199254740993), "num": int64(9007199254740993), "raw": []byte{0x00, 0xff},
			"tz": at, "ts": at, "day": time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC),
			"flag": true, "r": float32(0.1), "d": 0.1, "t": "tab\there", "doc": map[string]any{"a": []any{int64(1), "b", nil}, "n": int64(math.MaxInt64)},
			"i": int32(-2147483648), "s": int32(32767),
			"tod": 3*time.Hour + 4*time.Minute + 5123456*time.Microsecond, "span": -(25*time.Hour + time.Microsecond),
		}),
		rec("2", sdk.OperationCreate, sdk.StructuredData{"id": int64(2)}, sdk.StructuredData{
			"big": int64(math.MinInt64), "num": rat("-12345678901234567890.123456789012"), "raw": []byte{},
			"tz": time.Date(2026, 6, 30, 23, 59, 59, 999999000, time.UTC), "ts": time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC),
			"day":  time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC), // 1 BC
			"flag": false, "r": float32(math.MaxFloat32), "d": math.SmallestNonzeroFloat64, "t": "ünïcode", "doc": []any{1.5, true},
			"i": int(7), "s": int16(-1), "tod": time.Duration(0), "span": time.Duration(0),
		}),
		rec("3", sdk.OperationCreate, sdk.StructuredData{"id": int64(3)}, sdk.StructuredData{
			"big": nil, "num": nil, "raw": nil, "tz": nil, "ts": nil, "day": nil,
			"flag": nil, "r": nil, "d": nil, "t": nil, "doc": nil, "i": nil, "s": nil, "tod": nil, "span": nil,
		}),
		rec("4", sdk.OperationCreate, sdk.StructuredData{"id": int64(4)}, sdk.StructuredData{
			"big": uint32(math.MaxUint32), "num": uint64(math.MaxUint64), "raw": []byte("\x00\x01\xfe\xffnot utf-8 \xc3\x28"),
			"tz":   time.Date(2026, 3, 29, 1, 30, 0, 400, kathmandu),  // 0.4µs rounds down
			"ts":   time.Date(2026, 3, 29, 1, 30, 0, 1600, kathmandu), // 1.6µs rounds up
			"day":  time.Date(2026, 3, 29, 2, 0, 0, 0, kathmandu),     // the date where it is (in UTC, the 28th)
			"flag": true, "r": float32(math.Copysign(0, -1)), "d": -1e300, "t": "", "doc": sdk.StructuredData{"nested": map[string]any{}},
			"i": int8(-128), "s": uint8(255), "tod": 24 * time.Hour, "span": 3 * time.Microsecond,
		}),
	}
	want := []string{
		"1|9007199254740993|9007199254740993|00ff|2026-01-01 21:19:05.123456+00|2026-01-02 03:04:05.123456|2026-01-02|true|0.1|0.1|tab\there|{\"a\": [1, \"b\", null], \"n\": 9223372036854775807}|-2147483648|32767|03:04:05.123456|-25:00:00.000001",
		"2|-9223372036854775808|-12345678901234567890.123456789012||2026-06-30 23:59:59.999999+00|0001-01-01 00:00:00.000001|0001-12-31 BC|false|3.4028235e+38|5e-324|ünïcode|[1.5, true]|7|-1|00:00:00|00:00:00",
		"3|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>|<nil>",
		"4|4294967295|18446744073709551615|0001feff6e6f74207574662d3820c328|2026-03-28 19:45:00+00|2026-03-29 01:30:00.000002|2026-03-29|true|-0|-1e+300||{\"nested\": {}}|-128|255|24:00:00|00:00:00.000003",
	}
	return recs, want
}

// Typed values are written exactly: 64-bit integers into bigint and
// numeric, bytes that are not UTF-8 into bytea, times to the microsecond in
// the right zone, decimals into numeric, nested data into jsonb, durations
// into time and interval.
func TestTypedValues(t *testing.T) {
	for _, batch := range []int{1, 4} { // one row through VALUES, several through unnest
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			is := is.New(t)
			conn, d := setup(t, typedTable, map[string]string{"table": "typed"})
			pgtest.Exec(t, conn, `SET TIME ZONE 'UTC'`)
			recs, want := typedRows()
			for i := 0; i < len(recs); i += batch {
				n, err := d.Write(t.Context(), recs[i:min(i+batch, len(recs))])
				is.NoErr(err)
				is.Equal(n, min(batch, len(recs)-i))
			}
			got := pgtest.Rows(t, conn, typedQuery)
			is.Equal(len(got), len(want))
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("row %d:\n got %s\nwant %s", i+1, got[i], want[i])
				}
			}
		})
	}
}

// A value that cannot be written exactly to its column fails its record:
// the records before it are written, and the error names it and the column.
func TestTypedValueErrors(t *testing.T) {
	for name, c := range map[string]struct {
		col  string
		v    any
		want string
	}{
		"bytes into text":    {"t", []byte("abc"), `record at position "2": table typed: column "t" (text): binary data ([]byte, 3 bytes) goes only into a bytea column`},
		"bytes into jsonb":   {"doc", []byte("{}"), `record at position "2": table typed: column "doc" (jsonb): binary data`},
		"endless fraction":   {"num", big.NewRat(1, 3), `record at position "2": table typed: column "num" (numeric): the fraction has no exact decimal form: 1/3`},
		"fraction into int":  {"big", big.NewRat(5, 2), `record at position "2": table typed: column "big" (bigint): invalid input syntax for type bigint: "2.5"`},
		"time into boolean":  {"flag", time.Unix(0, 0), `record at position "2": table typed: column "flag" (boolean): invalid input syntax for type boolean`},
		"bytes into numeric": {"num", []byte{1}, `column "num" (numeric): binary data`},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			conn, d := setup(t, typedTable, map[string]string{"table": "typed"})
			var batch []sdk.Record
			for i := range 4 {
				var v any = "1"
				if i == 2 {
					v = c.v
				}
				batch = append(batch, rec(fmt.Sprint(i), sdk.OperationCreate, sdk.StructuredData{"id": i}, sdk.StructuredData{c.col: v}))
			}
			n, err := d.Write(t.Context(), batch)
			is.Equal(n, 2)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			is.True(sdk.IsRecordFault(err))
			is.Equal(pgtest.Rows(t, conn, `SELECT id FROM typed ORDER BY id`), []string{"0", "1"})
		})
	}
}

// text is appendText's text.
func text(v any, k textForm) (string, bool, error) {
	b, null, err := appendText(nil, v, k)
	return string(b), null, err
}

func TestText(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, kathmandu)
	for _, c := range []struct {
		v    any
		k    textForm
		want string
	}{
		{int64(math.MinInt64), other, "-9223372036854775808"},
		{uint64(math.MaxUint64), other, "18446744073709551615"},
		{float32(0.1), other, "0.1"},
		{0.1, other, "0.1"},
		{1e21, other, "1000000000000000000000"},
		{json.Number("1e400"), other, "1e400"},
		{[]byte{0, 0xff, 'a'}, bytea, `\x00ff61`},
		{at, timestamptz, "2026-01-01 21:19:05.123456789Z"},
		{at, wallClock, "2026-01-02 03:04:05.123456789"},
		{at, other, "2026-01-02T03:04:05.123456789+05:45"},
		{at, jsonDoc, `"2026-01-02T03:04:05.123456789+05:45"`},
		{time.Date(-43, 3, 15, 0, 0, 0, 0, time.UTC), wallClock, "0044-03-15 00:00:00 BC"},
		{time.Date(12026, 1, 2, 0, 0, 0, 0, time.UTC), timestamptz, "12026-01-02 00:00:00Z"},
		{rat("12.50"), other, "12.5"},
		{rat("-1/1024"), other, "-0.0009765625"},
		{rat("7"), other, "7"},
		{rat("-0.001"), other, "-0.001"},
		{rat("0.1234567890123456789012345"), other, "0.1234567890123456789012345"}, // a denominator beyond 64 bits
		{rat("-98765432109876543210.5"), other, "-98765432109876543210.5"},
		{big.NewInt(-5), other, "-5"},
		{map[string]any{"b": []byte{1}, "t": at.UTC()}, jsonDoc, `{"b":"AQ==","t":"2026-01-01T21:19:05.123456789Z"}`},
		{[]any(nil), jsonDoc, `[]`},
		{[]any{rat("-12.50"), (*big.Rat)(nil)}, jsonDoc, `[-12.5,null]`},
		{time.Duration(0), other, "0:00:00"},
		{25*time.Hour + 2*time.Minute + 3*time.Second + time.Microsecond, other, "25:02:03.000001"},
		{-time.Duration(math.MaxInt64), other, "-2562047:47:16.854775807"},
		{sdk.StructuredData{"z": map[string]any(nil), "a": []any{[]any(nil), nil, "\u2028<"}}, jsonDoc, `{"a":[[],null,"\u2028\u003c"],"z":{}}`},
	} {
		got, null, err := text(c.v, c.k)
		if err != nil || null || got != c.want {
			t.Errorf("text(%#v, %d) = %q, %v, %v; want %q", c.v, c.k, got, null, err, c.want)
		}
	}
	for _, r := range []*big.Rat{big.NewRat(1, 3), new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Lsh(big.NewInt(3), 70))} {
		if _, _, err := text(r, other); !errors.Is(err, errNoDecimal) {
			t.Errorf("text(%s): %v, want errNoDecimal", r, err)
		}
	}
	if _, _, err := text(map[string]any{"n": math.NaN()}, jsonDoc); err == nil || !strings.Contains(err.Error(), "a map[string]interface {} has no JSON form") {
		t.Errorf("text of a NaN in a map: %v", err)
	}
	for _, v := range []any{nil, (*big.Rat)(nil), (*big.Int)(nil)} {
		if _, null, err := text(v, other); !null || err != nil {
			t.Errorf("text(%#v) is not NULL", v)
		}
	}
}

func TestTextFormOf(t *testing.T) {
	for typ, want := range map[string]textForm{
		"bytea": bytea, "bytea[]": other,
		"timestamp with time zone": timestamptz, "timestamp(3) with time zone": timestamptz,
		"timestamp without time zone": wallClock, "timestamp(0) without time zone": wallClock, "date": wallClock,
		"timestamp with time zone[]": other, "json": jsonDoc, "jsonb": jsonDoc, "text": other, "time with time zone": other,
	} {
		if got := textFormOf(typ); got != want {
			t.Errorf("textFormOf(%q) = %d, want %d", typ, got, want)
		}
	}
}

// BenchmarkRender renders a run of 1000 upserts, as writeRun does before
// each statement: rows as the protocol's Struct delivers them (doubles and
// strings) and rows of typed values as a schema's decoder delivers them.
// A double renders as its shortest decimal form with no exponent, whole
// numbers by the integer path as every other number.
func TestTextOfDoubles(t *testing.T) {
	doubles := []float64{0, math.Copysign(0, -1), 1, -1, 7, 1023, 1e15, 1e16, -1e16, 1<<53 - 1, -(1<<53 - 1), 1 << 53, -(1 << 53), 1<<53 + 2, 1 << 60, -(1 << 62), 123456789012345678,
		1e21, 1e22, math.MaxFloat64, -math.MaxFloat64, 0.5, -0.5, 2.5, 1e15 + 0.5, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN()}
	for i := range 2000 {
		doubles = append(doubles, float64(i*i*i*7919), -float64(i)*1e9, float64(i)/8)
	}
	for _, v := range doubles {
		got, null, err := text(v, other)
		if want := strconv.FormatFloat(v, 'f', -1, 64); err != nil || null || got != want {
			t.Errorf("text(%v) = %q, %v, %v; want %q", v, got, null, err, want)
		}
	}
}

func BenchmarkRender(b *testing.B) {
	const n = 1000
	tbl := &table{name: "bench", types: map[string]string{
		"id": "bigint", "a": "text", "b": "text", "n": "integer",
		"big": "bigint", "num": "numeric", "raw": "bytea", "tz": "timestamp with time zone", "ts": "timestamp without time zone", "d": "double precision",
	}}
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, kathmandu)
	for _, c := range []struct {
		name string
		row  func(i int) (key, values map[string]any)
	}{
		{"struct", func(i int) (map[string]any, map[string]any) {
			return map[string]any{"id": float64(i)}, map[string]any{"a": "row", "b": "a text column of moderate length", "n": float64(i % 1000)}
		}},
		{"typed", func(i int) (map[string]any, map[string]any) {
			return map[string]any{"id": int64(i)}, map[string]any{
				"big": int64(1<<60 + i), "num": big.NewRat(int64(i)*1000+125, 1000), "raw": []byte("sixteen bytes!!!"),
				"tz": at.Add(time.Duration(i) * time.Microsecond), "ts": at, "d": float64(i) / 3, "a": "row",
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := &run{table: tbl, keys: []string{"id"}}
			for i := range n {
				key, values := c.row(i)
				r.rows = append(r.rows, row{key: key, values: values})
			}
			r.columns = sortedKeys(r.rows[0].values, r.keys, nil)
			b.ReportAllocs()
			for b.Loop() {
				if _, bad := r.render(); bad != nil {
					b.Fatal(bad.err)
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
