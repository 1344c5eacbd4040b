package postgres

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5/pgtype"
)

// value turns a column's value in PostgreSQL's text output format (as both
// the snapshot, which reads in text format, and pgoutput deliver it) into a
// Go value that survives the protocol's structured data, which carries
// strings, doubles, bools, nil and nested maps and lists:
//
//   - boolean: bool
//   - smallint, integer, oid, and bigint within ±2^53: int64 (a double
//     holds it exactly); larger bigints: their decimal text
//   - real, double precision: float64; NaN and infinities: their text
//   - json, jsonb: an object or array decoded into maps and lists; other
//     JSON values: their JSON text
//   - timestamp with time zone: RFC 3339 in UTC (the source's sessions
//     run in UTC); timestamp: RFC 3339 as if it were UTC
//   - everything else (numeric, text, date, uuid, bytea as \x hex, arrays,
//     ...): PostgreSQL's text, which the same type parses back
//
// The postgres destination casts these back to the column's type, so rows
// copied from one database to another keep their values.
func value(oid uint32, text []byte) any {
	switch oid {
	case pgtype.BoolOID:
		return len(text) > 0 && text[0] == 't'
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.OIDOID, pgtype.Int8OID:
		n, err := strconv.ParseInt(string(text), 10, 64)
		if err != nil || n > 1<<53 || n < -(1<<53) {
			return string(text)
		}
		return n
	case pgtype.Float4OID, pgtype.Float8OID:
		f, err := strconv.ParseFloat(string(text), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return string(text)
		}
		return f
	case pgtype.JSONOID, pgtype.JSONBOID:
		if len(text) > 0 && (text[0] == '{' || text[0] == '[') {
			var v any
			if json.Unmarshal(text, &v) == nil {
				return v
			}
		}
		return string(text)
	case pgtype.TimestamptzOID:
		return rfc3339(text, true)
	case pgtype.TimestampOID:
		return rfc3339(text, false)
	}
	return string(text)
}

// rfc3339 rewrites PostgreSQL's ISO timestamp output ("2026-01-02
// 03:04:05.123456", with "+00" in a UTC session for timestamptz) as RFC 3339
// ("2026-01-02T03:04:05.123456Z"). Text of another shape (infinity, BC,
// years past 9999, another zone) is returned as it is.
func rfc3339(text []byte, zoned bool) string {
	n := len(text)
	if zoned {
		if n < 22 || string(text[n-3:]) != "+00" {
			return string(text)
		}
		n -= 3
	}
	if n < 19 || text[4] != '-' || text[10] != ' ' || text[13] != ':' || text[16] != ':' || !fraction(text[19:n]) {
		return string(text)
	}
	b := make([]byte, 0, n+1)
	b = append(b, text[:10]...)
	b = append(b, 'T')
	b = append(b, text[11:n]...)
	return string(append(b, 'Z'))
}

// fraction reports whether b is empty or a decimal point and digits: all
// that may follow the seconds of a timestamp rfc3339 rewrites.
func fraction(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	if b[0] != '.' || len(b) == 1 {
		return false
	}
	for _, c := range b[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
