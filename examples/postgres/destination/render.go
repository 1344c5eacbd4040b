package destination

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/connkit/connkit/sdk"
)

// isWhole reports whether f is a whole number that a double holds exactly
// along with every whole number of smaller magnitude (|f| < 2⁵³), other
// than -0: one whose shortest decimal form is its integer's.
func isWhole(f float64) bool {
	return f == math.Trunc(f) && math.Abs(f) < 1<<53 && (f != 0 || !math.Signbit(f))
}

// textForm is what rendering a value needs to know of its column's type:
// the form its text takes.
type textForm int

const (
	other       textForm = iota
	bytea                // bytea
	timestamptz          // timestamp with time zone
	wallClock            // timestamp without time zone, date
	jsonDoc              // json, jsonb
)

// textFormOf classifies a column type as format_type spells it.
func textFormOf(typ string) textForm {
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

// appendText appends v to b in PostgreSQL's text input format, for a
// column of form k, whose type the statement then casts it to. Values come
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
//   - time.Duration (a decoded time-micros): hours:minutes:seconds, for
//     time and interval columns
//   - maps, lists: JSON, for json and jsonb columns (decimals in them as
//     numbers, bytes as base64 and times as RFC 3339, as encoding/json
//     writes them; a nil list or map as an empty one); a value with no JSON
//     form (NaN, a channel) is an error
//   - strings: as they are; text that is not valid UTF-8: into bytea, its
//     bytes exactly (\x hex); elsewhere an error, since PostgreSQL's text
//     and JSON take only valid text and replacing the bytes would change it
//   - nil: NULL (true, and nothing appended)
func appendText(b []byte, v any, k textForm) ([]byte, bool, error) {
	switch v := v.(type) {
	case nil:
		return b, true, nil
	case string:
		if !utf8.ValidString(v) {
			if k != bytea {
				return b, false, errInvalidUTF8
			}
			return hex.AppendEncode(append(b, `\x`...), []byte(v)), false, nil
		}
		return append(b, v...), false, nil
	case bool:
		return strconv.AppendBool(b, v), false, nil
	case time.Time:
		return appendTime(b, v, k), false, nil
	case time.Duration:
		return appendDuration(b, v), false, nil
	case []byte:
		if k != bytea {
			return b, false, fmt.Errorf("binary data ([]byte, %d bytes) goes only into a bytea column: as text it would change", len(v))
		}
		return hex.AppendEncode(append(b, `\x`...), v), false, nil
	case *big.Rat:
		if v == nil {
			return b, true, nil
		}
		b, err := appendRat(b, v)
		return b, false, err
	case *big.Int:
		if v == nil {
			return b, true, nil
		}
		return v.Append(b, 10), false, nil
	default:
		if n, ok := appendNumber(b, v); ok {
			return n, false, nil
		}
		b, err := appendJSON(b, v) // maps and lists, for json and jsonb columns
		if err != nil && !errors.Is(err, errInvalidUTF8) {
			err = fmt.Errorf("a %T has no JSON form: %w", v, err)
		}
		if err != nil {
			return b, false, err
		}
		return b, false, nil
	}
}

// appendNumber appends v if it is a number: an integer in decimal, a
// float as the shortest text that reads back as the same float, a
// json.Number as it is. It reports whether v is one.
func appendNumber(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case json.Number:
		return append(b, v...), true
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case int32:
		return strconv.AppendInt(b, int64(v), 10), true
	case int16:
		return strconv.AppendInt(b, int64(v), 10), true
	case int8:
		return strconv.AppendInt(b, int64(v), 10), true
	case uint:
		return strconv.AppendUint(b, uint64(v), 10), true
	case uint64:
		return strconv.AppendUint(b, v, 10), true
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10), true
	case uint16:
		return strconv.AppendUint(b, uint64(v), 10), true
	case uint8:
		return strconv.AppendUint(b, uint64(v), 10), true
	case float64:
		// Structured data crosses the protocol with every number a double:
		// no exponent, so integral values still parse as integers.
		if isWhole(v) {
			return strconv.AppendInt(b, int64(v), 10), true // the same text, a few times sooner
		}
		return strconv.AppendFloat(b, v, 'f', -1, 64), true
	case float32:
		return strconv.AppendFloat(b, float64(v), 'f', -1, 32), true
	}
	return b, false
}

// appendJSON appends v as JSON: maps with their keys sorted, as
// encoding/json writes them, but a nil list or map as an empty one, not
// null, since that is how a decoder hands over an empty Avro array; NULL
// is nil itself. Values other than maps and lists are encoding/json's.
func appendJSON(b []byte, v any) ([]byte, error) {
	var m map[string]any
	switch v := v.(type) {
	case []any:
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, x); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		m = v
	case sdk.StructuredData:
		m = v
	case *big.Rat:
		if v == nil {
			return append(b, "null"...), nil
		}
		return appendRat(b, v)
	case string:
		if !utf8.ValidString(v) {
			return b, fmt.Errorf("%w: %q", errInvalidUTF8, v)
		}
		j, err := json.Marshal(v)
		return append(b, j...), err
	default:
		j, err := json.Marshal(v)
		return append(b, j...), err
	}
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ',')
		}
		if !utf8.ValidString(k) {
			return b, fmt.Errorf("%w: the name %q", errInvalidUTF8, k)
		}
		j, err := json.Marshal(k)
		if err != nil {
			return b, err
		}
		b = append(append(b, j...), ':')
		if b, err = appendJSON(b, m[k]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendTime appends t's text for a column of form k.
func appendTime(b []byte, t time.Time, k textForm) []byte {
	switch k {
	case timestamptz:
		return appendTimestamp(b, t.UTC(), true)
	case wallClock:
		return appendTimestamp(b, t, false)
	case jsonDoc:
		return append(t.AppendFormat(append(b, '"'), time.RFC3339Nano), '"')
	}
	return t.AppendFormat(b, time.RFC3339Nano)
}

// appendTimestamp appends t as PostgreSQL's ISO input reads it: its wall
// clock, "Z" if zoned (t is in UTC then), and " BC" for years before 1.
func appendTimestamp(b []byte, t time.Time, zoned bool) []byte {
	year, month, day := t.Date()
	hour, minute, second := t.Clock()
	bc := year < 1
	if bc {
		year = 1 - year // Go's year 0 is 1 BC
	}
	for p := 1000; p > 1 && year < p; p /= 10 {
		b = append(b, '0') // four digits at least
	}
	b = strconv.AppendInt(b, int64(year), 10)
	b = append(b, '-', digit(int(month)/10), digit(int(month)), '-', digit(day/10), digit(day), ' ',
		digit(hour/10), digit(hour), ':', digit(minute/10), digit(minute), ':', digit(second/10), digit(second))
	if ns := t.Nanosecond(); ns > 0 {
		b = append(b, '.')
		for p := 100000000; ns > 0; p /= 10 {
			b = append(b, digit(ns/p))
			ns %= p
		}
	}
	if zoned {
		b = append(b, 'Z')
	}
	if bc {
		b = append(b, " BC"...)
	}
	return b
}

// digit is n's last decimal digit.
func digit(n int) byte { return byte('0' + n%10) }

// appendDuration appends d as [-]hours:minutes:seconds, which time and
// interval columns both read: a decoded Avro time-micros is a
// time.Duration since midnight.
func appendDuration(b []byte, d time.Duration) []byte {
	u := uint64(d)
	if d < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendUint(b, u/uint64(time.Hour), 10)
	m, sec, ns := int(u/uint64(time.Minute)%60), int(u/uint64(time.Second)%60), int(u%uint64(time.Second))
	b = append(b, ':', digit(m/10), digit(m), ':', digit(sec/10), digit(sec))
	if ns > 0 {
		b = append(b, '.')
		for p := 100000000; ns > 0; p /= 10 {
			b = append(b, digit(ns/p))
			ns %= p
		}
	}
	return b
}

// errInvalidUTF8 is text that is not valid UTF-8, for a column that takes
// only valid text.
var errInvalidUTF8 = errors.New("not valid UTF-8 text (refused: replacing the invalid bytes would change it)")

// errNoDecimal is a fraction whose decimal form does not end.
var errNoDecimal = errors.New("the fraction has no exact decimal form")

// appendRat appends r as an exact decimal: its denominator must have no
// prime factors but 2 and 5, as every decoded decimal's has.
func appendRat(b []byte, r *big.Rat) ([]byte, error) {
	if r.IsInt() {
		return r.Num().Append(b, 10), nil
	}
	scale, ok := decimalScale(r.Denom())
	if !ok {
		return b, fmt.Errorf("%w: %s", errNoDecimal, r.RatString())
	}
	// r's digits are num·(10^scale/denom), the point scale digits from the right.
	var m, x big.Int
	if scale < 20 {
		m.SetUint64(pow10(scale))
	} else {
		m.Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	}
	m.Quo(&m, r.Denom())
	x.Mul(r.Num(), &m)
	if x.Sign() < 0 {
		b = append(b, '-')
		x.Neg(&x)
	}
	start := len(b)
	b = x.Append(b, 10)
	for len(b)-start <= scale { // at least one digit before the point
		b = append(b, 0)
		copy(b[start+1:], b[start:])
		b[start] = '0'
	}
	point := len(b) - scale
	b = append(b, 0)
	copy(b[point+1:], b[point:])
	b[point] = '.'
	return b, nil
}

func pow10(n int) uint64 {
	p := uint64(1)
	for range n {
		p *= 10
	}
	return p
}

// decimalScale returns the scale of the decimals with denominator d: the
// larger exponent of d = 2^i·5^j, or false if d has another prime factor.
func decimalScale(d *big.Int) (int, bool) {
	if d.IsUint64() {
		n := d.Uint64()
		twos := bits.TrailingZeros64(n)
		n >>= twos
		fives := 0
		for n%5 == 0 {
			n /= 5
			fives++
		}
		return max(twos, fives), n == 1
	}
	n := new(big.Int).Rsh(d, d.TrailingZeroBits())
	twos := int(d.TrailingZeroBits())
	fives := 0
	five, q, m := big.NewInt(5), new(big.Int), new(big.Int)
	for {
		q.QuoRem(n, five, m)
		if m.Sign() != 0 {
			break
		}
		n, q = q, n
		fives++
	}
	return max(twos, fives), n.IsInt64() && n.Int64() == 1
}
