package postgres

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// kind is what rendering a value needs to know of its column's type.
type kind int

const (
	other       kind = iota
	bytea            // bytea
	timestamptz      // timestamp with time zone
	wallClock        // timestamp without time zone, date
	jsonDoc          // json, jsonb
)

// kindOf classifies a column type as format_type spells it.
func kindOf(typ string) kind {
	switch {
	case typ == "bytea":
		return bytea
	case typ == "date", strings.HasPrefix(typ, "timestamp") && strings.HasSuffix(typ, "without time zone"):
		return wallClock
	case strings.HasPrefix(typ, "timestamp") && strings.HasSuffix(typ, "with time zone"):
		return timestamptz
	case typ == "json", typ == "jsonb":
		return jsonDoc
	}
	return other
}

// text renders a value in PostgreSQL's text input format, for a column of
// kind k, which the statement then casts to the column's type. Values come
// from structured payloads (Go types as a schema's decoder gives them, or
// doubles and strings as the protocol's Struct carries them) and from raw
// JSON (json.Number). Every value renders exactly, never through a double:
//
//   - integers: decimal, so bigint and numeric take all 64 bits
//   - float32, float64: the shortest text that reads back as the same
//     float (an integral double has no exponent, so it fits integer columns)
//   - *big.Rat, *big.Int: decimal; a fraction with no finite decimal form
//     (1/3) is an error
//   - time.Time: into timestamptz, the instant (rendered in UTC); into
//     timestamp and date, its wall clock in its own location, as pgx and
//     PostgreSQL's own cast of a literal with an offset do; elsewhere,
//     RFC 3339 with its offset. Nanoseconds are rounded to PostgreSQL's
//     microseconds; years before 1 are BC.
//   - []byte: into bytea, its \x hex form; into any other column, an error,
//     since writing bytes as text would change them
//   - maps, lists: JSON, for json and jsonb columns (bytes in them as
//     base64 and times as RFC 3339, as encoding/json writes them)
//   - strings: as they are; nil: NULL
func text(v any, k kind) (s string, null bool, err error) {
	switch v := v.(type) {
	case nil:
		return "", true, nil
	case string:
		return v, false, nil
	case json.Number:
		return v.String(), false, nil
	case bool:
		return strconv.FormatBool(v), false, nil
	case int:
		return strconv.Itoa(v), false, nil
	case int64:
		return strconv.FormatInt(v, 10), false, nil
	case int32:
		return strconv.FormatInt(int64(v), 10), false, nil
	case int16:
		return strconv.FormatInt(int64(v), 10), false, nil
	case int8:
		return strconv.FormatInt(int64(v), 10), false, nil
	case uint:
		return strconv.FormatUint(uint64(v), 10), false, nil
	case uint64:
		return strconv.FormatUint(v, 10), false, nil
	case uint32:
		return strconv.FormatUint(uint64(v), 10), false, nil
	case uint16:
		return strconv.FormatUint(uint64(v), 10), false, nil
	case uint8:
		return strconv.FormatUint(uint64(v), 10), false, nil
	case float64:
		// Structured data crosses the protocol with every number a double:
		// no exponent, so integral values still parse as integers.
		return strconv.FormatFloat(v, 'f', -1, 64), false, nil
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 32), false, nil
	case time.Time:
		return timeText(v, k), false, nil
	case []byte:
		if k != bytea {
			return "", false, fmt.Errorf("binary data ([]byte, %d bytes) goes only into a bytea column: as text it would change", len(v))
		}
		b := make([]byte, 2+hex.EncodedLen(len(v)))
		b[0], b[1] = '\\', 'x'
		hex.Encode(b[2:], v)
		return string(b), false, nil
	case *big.Rat:
		if v == nil {
			return "", true, nil
		}
		return ratText(v)
	case *big.Int:
		if v == nil {
			return "", true, nil
		}
		return v.String(), false, nil
	default:
		b, err := json.Marshal(v) // maps and lists, for json and jsonb columns
		if err != nil {
			return fmt.Sprint(v), false, nil
		}
		return string(b), false, nil
	}
}

// timeText renders t for a column of kind k.
func timeText(t time.Time, k kind) string {
	switch k {
	case timestamptz:
		return string(appendTimestamp(nil, t.UTC(), true))
	case wallClock:
		return string(appendTimestamp(nil, t, false))
	case jsonDoc:
		return `"` + t.Format(time.RFC3339Nano) + `"`
	}
	return t.Format(time.RFC3339Nano)
}

// appendTimestamp appends t as PostgreSQL's ISO input reads it: its wall
// clock, "Z" if zoned (t is in UTC then), and " BC" for years before 1.
func appendTimestamp(b []byte, t time.Time, zoned bool) []byte {
	year := t.Year()
	bc := year < 1
	if bc {
		year = 1 - year // Go's year 0 is 1 BC
	}
	for p := 1000; p > 1 && year < p; p /= 10 {
		b = append(b, '0') // four digits at least
	}
	b = strconv.AppendInt(b, int64(year), 10)
	b = t.AppendFormat(b, "-01-02 15:04:05.999999999")
	if zoned {
		b = append(b, 'Z')
	}
	if bc {
		b = append(b, " BC"...)
	}
	return b
}

// errNoDecimal is a fraction whose decimal form does not end.
var errNoDecimal = errors.New("the fraction has no exact decimal form")

// ratText renders r as an exact decimal: its denominator must have no
// prime factors but 2 and 5, as every decoded decimal's has.
func ratText(r *big.Rat) (string, bool, error) {
	if r.IsInt() {
		return r.Num().String(), false, nil
	}
	// The scale of a/(2^i 5^j) is max(i, j).
	d := new(big.Int).Set(r.Denom())
	twos := d.TrailingZeroBits()
	d.Rsh(d, twos)
	fives := uint(0)
	five, m := big.NewInt(5), new(big.Int)
	for {
		q, rem := new(big.Int).QuoRem(d, five, m)
		if rem.Sign() != 0 {
			break
		}
		d, fives = q, fives+1
	}
	if !d.IsInt64() || d.Int64() != 1 {
		return "", false, fmt.Errorf("%w: %s", errNoDecimal, r.RatString())
	}
	return r.FloatString(int(max(twos, fives))), false, nil
}
