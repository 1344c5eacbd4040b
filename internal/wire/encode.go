package wire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/conduitio/conduit-commons/opencdc"
	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of connector/v2/source.proto, beyond those decode.go names.
const sourceRunResponseRecords = 1

// appendSourceRunResponse appends the wire form of a
// connector.v2.Source.Run.Response holding records to b: what converting
// them with opencdc's ToProto and marshalling the generated messages gives,
// without building those messages. Structured data is what that costs
// most: every field becomes a google.protobuf.Value first. Values are
// converted as structpb.NewValue converts them, and what it rejects is an
// error here too, naming the record, with two exceptions, where structpb
// loses or refuses a value that structured data exists to carry:
//
//   - an integer beyond ±2^53, which a double cannot hold, travels as its
//     decimal text (structpb rounds it to the nearest double); within
//     ±2^53 integers are numbers, as there;
//   - a time.Time travels as RFC 3339 text with its offset and nanoseconds,
//     as encoding/json and protobuf's JSON mapping write it (structpb
//     refuses it).
//
// Both are text that the value's own type parses back exactly, the way
// protobuf's JSON mapping carries 64-bit integers and timestamps; a source
// whose data is encoded with a schema never gets here with them. []byte
// stays base64 text, as structpb, encoding/json and that mapping all have it.
func appendSourceRunResponse(b []byte, records []opencdc.Record) ([]byte, error) {
	for i, r := range records {
		var start int
		b, start = openMessage(b, sourceRunResponseRecords)
		var err error
		if b, err = appendRecord(b, r); err != nil {
			return nil, fmt.Errorf("record %d at position %q: %w", i, r.Position, err)
		}
		b = closeMessage(b, start)
	}
	return b, nil
}

func appendRecord(b []byte, r opencdc.Record) ([]byte, error) {
	if len(r.Position) > 0 {
		b = protowire.AppendTag(b, recordPosition, protowire.BytesType)
		b = protowire.AppendBytes(b, r.Position)
	}
	if r.Operation != 0 {
		b = protowire.AppendTag(b, recordOperation, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(int64(int32(r.Operation))))
	}
	for k, v := range r.Metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return nil, fmt.Errorf("metadata %q: %w", k, errInvalidUTF8)
		}
		var start int
		b, start = openMessage(b, recordMetadata)
		b = appendString(b, entryKey, k)
		b = appendString(b, entryValue, v)
		b = closeMessage(b, start)
	}
	var err error
	if r.Key != nil {
		if b, err = appendData(b, recordKey, r.Key); err != nil {
			return nil, fmt.Errorf("key: %w", err)
		}
	}
	var start int
	b, start = openMessage(b, recordPayload)
	if r.Payload.Before != nil {
		if b, err = appendData(b, changeBefore, r.Payload.Before); err != nil {
			return nil, fmt.Errorf("payload before: %w", err)
		}
	}
	if r.Payload.After != nil {
		if b, err = appendData(b, changeAfter, r.Payload.After); err != nil {
			return nil, fmt.Errorf("payload after: %w", err)
		}
	}
	return closeMessage(b, start), nil
}

// appendData appends an opencdc.v1.Data as field num.
func appendData(b []byte, num protowire.Number, d opencdc.Data) ([]byte, error) {
	var start int
	b, start = openMessage(b, num)
	switch d := d.(type) {
	case opencdc.RawData:
		b = protowire.AppendTag(b, dataRaw, protowire.BytesType)
		b = protowire.AppendBytes(b, d)
	case opencdc.StructuredData:
		var inner int
		b, inner = openMessage(b, dataStructured)
		var err error
		if b, err = appendStruct(b, d); err != nil {
			return nil, err
		}
		b = closeMessage(b, inner)
	default:
		return nil, fmt.Errorf("unsupported data type %T", d)
	}
	return closeMessage(b, start), nil
}

// appendStruct appends the fields of a google.protobuf.Struct.
func appendStruct(b []byte, m map[string]any) ([]byte, error) {
	for k, v := range m {
		if !utf8.ValidString(k) {
			return nil, fmt.Errorf("field %q: %w", k, errInvalidUTF8)
		}
		var start int
		b, start = openMessage(b, structFields)
		b = appendString(b, entryKey, k)
		var value int
		b, value = openMessage(b, entryValue)
		var err error
		if b, err = appendValue(b, v); err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		b = closeMessage(b, value)
		b = closeMessage(b, start)
	}
	return b, nil
}

// appendValue appends the fields of a google.protobuf.Value holding v.
func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		b = protowire.AppendTag(b, valueNull, protowire.VarintType)
		return protowire.AppendVarint(b, 0), nil
	case bool:
		b = protowire.AppendTag(b, valueBool, protowire.VarintType)
		return protowire.AppendVarint(b, protowire.EncodeBool(v)), nil
	case int:
		return appendInteger(b, int64(v)), nil
	case int8:
		return appendNumber(b, float64(v)), nil
	case int16:
		return appendNumber(b, float64(v)), nil
	case int32:
		return appendNumber(b, float64(v)), nil
	case int64:
		return appendInteger(b, v), nil
	case uint:
		return appendUnsigned(b, uint64(v)), nil
	case uint8:
		return appendNumber(b, float64(v)), nil
	case uint16:
		return appendNumber(b, float64(v)), nil
	case uint32:
		return appendNumber(b, float64(v)), nil
	case uint64:
		return appendUnsigned(b, v), nil
	case float32:
		return appendNumber(b, float64(v)), nil
	case float64:
		return appendNumber(b, v), nil
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return nil, fmt.Errorf("invalid number format %q, expected a float64: %w", v, err)
		}
		return appendNumber(b, f), nil
	case string:
		if !utf8.ValidString(v) {
			return nil, errInvalidUTF8
		}
		return appendString(b, valueString, v), nil
	case []byte:
		return appendString(b, valueString, base64.StdEncoding.EncodeToString(v)), nil
	case time.Time:
		return appendString(b, valueString, v.Format(time.RFC3339Nano)), nil
	case map[string]any:
		var start int
		b, start = openMessage(b, valueStruct)
		var err error
		if b, err = appendStruct(b, v); err != nil {
			return nil, err
		}
		return closeMessage(b, start), nil
	case []any:
		var list int
		b, list = openMessage(b, valueList)
		for i, x := range v {
			var start int
			b, start = openMessage(b, listValues)
			var err error
			if b, err = appendValue(b, x); err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			b = closeMessage(b, start)
		}
		return closeMessage(b, list), nil
	}
	return nil, fmt.Errorf("invalid type %T: structured data holds nil, booleans, numbers, strings, []byte, time.Time, map[string]any and []any", v)
}

// maxExact is the largest magnitude up to which a double holds every integer.
const maxExact = 1 << 53

// appendInteger appends n as a number if a double holds it exactly, as its
// decimal text otherwise.
func appendInteger(b []byte, n int64) []byte {
	if n > maxExact || n < -maxExact {
		return appendString(b, valueString, strconv.FormatInt(n, 10))
	}
	return appendNumber(b, float64(n))
}

func appendUnsigned(b []byte, n uint64) []byte {
	if n > maxExact {
		return appendString(b, valueString, strconv.FormatUint(n, 10))
	}
	return appendNumber(b, float64(n))
}

func appendNumber(b []byte, f float64) []byte {
	b = protowire.AppendTag(b, valueNumber, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(f))
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// openMessage appends the tag of the length-delimited field num and one
// byte for its length, and returns where its content starts; closeMessage
// fills in the length once the content is appended. Most nested messages
// are shorter than 128 bytes, so the length rarely needs more room.
func openMessage(b []byte, num protowire.Number) ([]byte, int) {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = append(b, 0)
	return b, len(b)
}

func closeMessage(b []byte, start int) []byte {
	n := len(b) - start
	if n < 0x80 {
		b[start-1] = byte(n)
		return b
	}
	extra := protowire.SizeVarint(uint64(n)) - 1
	b = append(b, make([]byte, extra)...)
	copy(b[start+extra:], b[start:start+n])
	protowire.AppendVarint(b[:start-1], uint64(n))
	return b
}
