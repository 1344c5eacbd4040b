package format

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/conduitio/conduit-commons/opencdc"
)

// encoder appends JSON to buf the way conduit-commons' opencdc package
// encodes records (its JSON library): map keys sorted, <, > and & escaped,
// invalid UTF-8 replaced by U+FFFD, and floats written with strconv's
// shortest form, exponent as strconv writes it (1e-07, not 1e-7).
// Common types are written here without reflection; others go through
// conduit-commons (see appendOther).
type encoder struct {
	buf  []byte
	keys []string // a stack of map keys being sorted, shared by nested maps
}

var encoders = sync.Pool{New: func() any { return new(encoder) }}

func getEncoder() *encoder {
	e := encoders.Get().(*encoder)
	e.buf = e.buf[:0]
	return e
}

// bytes returns a copy of what e holds and gives e back to the pool.
func (e *encoder) bytes() []byte {
	out := slices.Clone(e.buf)
	e.release()
	return out
}

// release gives e back to the pool, unless it grew too large to keep.
func (e *encoder) release() {
	if cap(e.buf) > 1<<20 {
		return
	}
	clear(e.keys[:cap(e.keys)])
	e.keys = e.keys[:0]
	encoders.Put(e)
}

var errUnsupportedFloat = errors.New("json: NaN and infinite floats have no JSON form")

func (e *encoder) value(v any) error {
	switch v := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case string:
		e.string(v)
	case bool:
		e.buf = strconv.AppendBool(e.buf, v)
	case int, int8, int16, int32, int64:
		e.buf = strconv.AppendInt(e.buf, reflect.ValueOf(v).Int(), 10)
	case uint, uint8, uint16, uint32, uint64:
		e.buf = strconv.AppendUint(e.buf, reflect.ValueOf(v).Uint(), 10)
	case float64:
		return e.float(v, 64)
	case float32:
		return e.float(float64(v), 32)
	case []byte:
		e.base64(v)
	case opencdc.RawData:
		e.base64(v)
	case map[string]any:
		return e.object(v)
	case opencdc.StructuredData:
		return e.object(v)
	case []any:
		return array(e, v, e.value)
	case []string:
		return array(e, v, func(s string) error { e.string(s); return nil })
	case map[string]string:
		e.stringMap(v)
	default:
		return e.other(v)
	}
	return nil
}

// array appends v as a JSON array, each element by elem; nil is null.
func array[T any](e *encoder, v []T, elem func(T) error) error {
	if v == nil {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	e.buf = append(e.buf, '[')
	for i, x := range v {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := elem(x); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, ']')
	return nil
}

// other appends a value of a type value does not know, encoded by
// conduit-commons (StructuredData.Bytes, which panics where the JSON
// library fails: the panic is returned as an error).
func (e *encoder) other(v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("json: cannot encode %T: %v", v, p)
		}
	}()
	b := opencdc.StructuredData{"": v}.Bytes() // {"":...}
	e.buf = append(e.buf, b[len(`{"":`):len(b)-1]...)
	return nil
}

// object appends m with its keys sorted; a nil map is null.
func (e *encoder) object(m map[string]any) error {
	return sortedObject(e, m, e.value)
}

// stringMap appends m with its keys sorted; a nil map is null.
func (e *encoder) stringMap(m map[string]string) {
	_ = sortedObject(e, m, func(v string) error { e.string(v); return nil })
}

// sortedObject appends m as a JSON object with its keys sorted, each value
// written by value; a nil map is null.
func sortedObject[V any](e *encoder, m map[string]V, value func(V) error) error {
	if m == nil {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	base := len(e.keys)
	for k := range m {
		e.keys = append(e.keys, k)
	}
	slices.Sort(e.keys[base:])
	e.buf = append(e.buf, '{')
	for i := base; i < len(e.keys); i++ {
		if i > base {
			e.buf = append(e.buf, ',')
		}
		k := e.keys[i]
		e.string(k)
		e.buf = append(e.buf, ':')
		if err := value(m[k]); err != nil {
			e.keys = e.keys[:base]
			return err
		}
	}
	e.keys = e.keys[:base]
	e.buf = append(e.buf, '}')
	return nil
}

func (e *encoder) float(f float64, bits int) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return errUnsupportedFloat
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 32 {
			abs32 := float32(abs)
			if abs32 < 1e-6 || abs32 >= 1e21 {
				format = 'e'
			}
		} else if abs < 1e-6 || abs >= 1e21 {
			format = 'e'
		}
	}
	e.buf = strconv.AppendFloat(e.buf, f, format, -1, bits)
	return nil
}

// base64 appends b as a base64 string; nil is null.
func (e *encoder) base64(b []byte) {
	if b == nil {
		e.buf = append(e.buf, "null"...)
		return
	}
	e.buf = append(e.buf, '"')
	e.buf = base64.StdEncoding.AppendEncode(e.buf, b)
	e.buf = append(e.buf, '"')
}

const hex = "0123456789abcdef"

// string appends s as a JSON string.
func (e *encoder) string(s string) {
	b := append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	e.buf = append(b, '"')
}
