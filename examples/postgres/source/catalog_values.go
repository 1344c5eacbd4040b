package source

import (
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// value turns a column's value in PostgreSQL's text output format (as both
// the snapshot, which reads in text format, and pgoutput deliver it) into
// the Go value that carries it exactly both ways a record leaves the
// plugin: encoded with a schema (Avro, whose types these are) and, with
// schemas off, as the protocol's Struct, where the plugin's encoder turns
// integers beyond ±2^53 and times into text their columns cast back:
//
//   - boolean: bool
//   - smallint, integer, oid, bigint: int64
//   - real, double precision: float64; NaN and infinities: their text
//   - json, jsonb: their JSON text, as a string: a json column keeps its
//     text as written (2.50 stays 2.50, spaces stay) and JSON numbers may
//     be longer than a double holds, so decoding them would change them; a
//     processor that needs the document parses the string
//   - timestamp with time zone: a time.Time in UTC (the source's sessions
//     run in UTC); timestamp: its wall clock as a time.Time in UTC; either
//     outside years 1-9999 (BC, infinity): PostgreSQL's text
//   - everything else (numeric, text, date, uuid, bytea as \x hex, arrays,
//     ...): PostgreSQL's text, which the same type parses back
//
// Numeric stays text because the schema extractor makes a *big.Rat a
// decimal(31, 10), which would round; bytea stays text because the
// Struct carries []byte as base64, which a bytea column would take as
// other bytes. The postgres destination casts these back to the column's
// type, so rows copied from one database to another keep their values; so
// does the incumbent's, whose pgx sends a string parameter in text format
// (internal/e2e's TestInteropIncumbentPostgresDestination shows both).
func value(oid uint32, text []byte) any {
	switch oid {
	case pgtype.BoolOID:
		return len(text) > 0 && text[0] == 't'
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.OIDOID, pgtype.Int8OID:
		n, err := strconv.ParseInt(string(text), 10, 64)
		if err != nil {
			return string(text)
		}
		return n
	case pgtype.Float4OID, pgtype.Float8OID:
		f, err := strconv.ParseFloat(string(text), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return string(text)
		}
		return f
	case pgtype.TimestamptzOID:
		return timestamp(text, true)
	case pgtype.TimestampOID:
		return timestamp(text, false)
	}
	return string(text)
}

// timestamp parses PostgreSQL's ISO timestamp output ("2026-01-02
// 03:04:05.123456", with "+00" in a UTC session for timestamptz) into a
// time.Time in UTC. Text of another shape (infinity, BC, years past 9999,
// another zone) is returned as it is.
func timestamp(text []byte, zoned bool) any {
	n := len(text)
	if zoned {
		if n < 22 || string(text[n-3:]) != "+00" {
			return string(text)
		}
		n -= 3
	}
	if n < 19 || text[4] != '-' || text[7] != '-' || text[10] != ' ' || text[13] != ':' || text[16] != ':' || !fraction(text[19:n]) {
		return string(text)
	}
	var f [6]int // year, month, day, hour, minute, second
	for i, at := range [6]int{0, 5, 8, 11, 14, 17} {
		end := at + 2
		if i == 0 {
			end = 4
		}
		for _, c := range text[at:end] {
			if c < '0' || c > '9' {
				return string(text)
			}
			f[i] = f[i]*10 + int(c-'0')
		}
	}
	ns := 0
	for i, p := 20, 100000000; i < n && p > 0; i, p = i+1, p/10 {
		ns += int(text[i]-'0') * p
	}
	t := time.Date(f[0], time.Month(f[1]), f[2], f[3], f[4], f[5], ns, time.UTC)
	if n > 29 || t.Month() != time.Month(f[1]) || t.Day() != f[2] || t.Hour() != f[3] || t.Minute() != f[4] || t.Second() != f[5] {
		return string(text) // out of range, or more than nanoseconds
	}
	return t
}

// fraction reports whether b is empty or a decimal point and digits: all
// that may follow the seconds of a timestamp parses.
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
