package generator

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/connkit/connkit/sdk"
)

// fieldType is the type of a generated payload field.
type fieldType string

const (
	fieldInt      fieldType = "int"
	fieldString   fieldType = "string"
	fieldTime     fieldType = "time"
	fieldBool     fieldType = "bool"
	fieldDuration fieldType = "duration"
)

type field struct {
	name string
	typ  fieldType
	json []byte // the name as a JSON object key, with the colon
}

// parseFields turns format.options into fields sorted by name, so payloads
// have a stable shape.
func parseFields(prefix string, options map[string]string) ([]field, error) {
	if len(options) == 0 {
		return nil, fmt.Errorf(`parameter "%sformat.options.*": got no fields, expected at least one, such as %sformat.options.id: int`, prefix, prefix)
	}
	fields := make([]field, 0, len(options))
	for name, typ := range options {
		switch t := fieldType(typ); t {
		case fieldInt, fieldString, fieldTime, fieldBool, fieldDuration:
			fields = append(fields, field{name: name, typ: t, json: append(strconv.AppendQuote(nil, name), ':')})
		default:
			return nil, fmt.Errorf("parameter %q: got %q, expected one of int, string, time, bool, duration", prefix+"format.options."+name, typ)
		}
	}
	slices.SortFunc(fields, func(a, b field) int {
		if a.name < b.name {
			return -1
		}
		return 1
	})
	return fields, nil
}

var words = []string{"amber", "basalt", "cobalt", "delta", "ember", "fjord", "granite", "harbor", "indigo", "juniper", "krypton", "lagoon", "meadow", "nimbus", "obsidian", "prairie"}

// value generates a value for field f. Values are the ones structured data
// can carry over the protocol: a time is an RFC 3339 string, a duration its
// nanoseconds.
func (f field) value(rng *rand.Rand, now time.Time) any {
	switch f.typ {
	case fieldInt:
		return rng.Int64N(1 << 31)
	case fieldString:
		return words[rng.IntN(len(words))] + "-" + words[rng.IntN(len(words))]
	case fieldTime:
		return now.Format(time.RFC3339Nano)
	case fieldBool:
		return rng.IntN(2) == 1
	default:
		return rng.Int64N(int64(time.Hour))
	}
}

// structured builds the payload as structured data.
func structured(fields []field, rng *rand.Rand, now time.Time) sdk.StructuredData {
	data := make(sdk.StructuredData, len(fields))
	for _, f := range fields {
		data[f.name] = f.value(rng, now)
	}
	return data
}

// raw builds the payload as a JSON object, appending to buf.
func raw(buf []byte, fields []field, rng *rand.Rand, now time.Time) []byte {
	buf = append(buf, '{')
	for i, f := range fields {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, f.json...)
		switch v := f.value(rng, now).(type) {
		case int64:
			buf = strconv.AppendInt(buf, v, 10)
		case string:
			buf = strconv.AppendQuote(buf, v)
		case bool:
			buf = strconv.AppendBool(buf, v)
		}
	}
	return append(buf, '}')
}
