package plugin

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/conduitio/conduit-commons/opencdc"
	"google.golang.org/protobuf/encoding/protowire"
)

// recordDecoder turns the wire form of a destination's Run request straight
// into records, the same records that unmarshalling the generated messages
// and converting them with opencdc's FromProto gives, without the
// intermediate messages. Structured data dominates a destination's CPU
// time otherwise: each field is a google.protobuf.Value before it is a map
// entry.
//
// A decoder remembers the field names it has seen, so that records of the
// same shape share their keys' strings. It is not safe for concurrent use.
type recordDecoder struct {
	names map[string]string
}

// maxNames bounds the names a decoder remembers; past it, it starts over.
const maxNames = 4096

// Field numbers, from opencdc/v1/opencdc.proto, google/protobuf/struct.proto
// and connector/v2/destination.proto.
const (
	runRequestRecords = 1

	recordPosition  = 1
	recordOperation = 2
	recordMetadata  = 3
	recordKey       = 4
	recordPayload   = 5

	changeBefore = 1
	changeAfter  = 2

	dataRaw        = 1
	dataStructured = 2

	structFields = 1
	entryKey     = 1
	entryValue   = 2

	valueNull   = 1
	valueNumber = 2
	valueString = 3
	valueBool   = 4
	valueStruct = 5
	valueList   = 6

	listValues = 1
)

var errInvalidUTF8 = errors.New("string field contains invalid UTF-8")

// runRequest decodes b, a connector.v2.Destination.Run.Request, appending
// its records to records.
func (d *recordDecoder) runRequest(b []byte, records []opencdc.Record) ([]opencdc.Record, error) {
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != runRequestRecords || typ != protowire.BytesType {
			return nil
		}
		var r opencdc.Record
		if err := d.record(v, &r); err != nil {
			return fmt.Errorf("record %d: %w", len(records), err)
		}
		records = append(records, r)
		return nil
	})
	return records, err
}

func (d *recordDecoder) record(b []byte, r *opencdc.Record) error {
	return fields(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		var err error
		switch {
		case num == recordPosition && typ == protowire.BytesType:
			r.Position = bytesOrNil(v)
		case num == recordOperation && typ == protowire.VarintType:
			r.Operation = opencdc.Operation(int32(n))
		case num == recordMetadata:
			if r.Metadata == nil {
				r.Metadata = opencdc.Metadata{} // even for a wrong wire type, as the generated code
			}
			if typ == protowire.BytesType {
				err = d.metadataEntry(v, r.Metadata)
			}
		case num == recordKey && typ == protowire.BytesType:
			r.Key, err = d.data(v)
		case num == recordPayload && typ == protowire.BytesType:
			r.Payload, err = d.change(v)
		}
		return err
	})
}

func (d *recordDecoder) metadataEntry(b []byte, m opencdc.Metadata) error {
	var key, value string
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType || (num != entryKey && num != entryValue) {
			return nil
		}
		if !utf8.Valid(v) {
			return fmt.Errorf("metadata: %w", errInvalidUTF8)
		}
		if num == entryKey {
			key = d.name(v)
		} else {
			value = string(v)
		}
		return nil
	})
	m[key] = value
	return err
}

func (d *recordDecoder) change(b []byte) (opencdc.Change, error) {
	var c opencdc.Change
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		var err error
		switch {
		case num == changeBefore && typ == protowire.BytesType:
			c.Before, err = d.data(v)
		case num == changeAfter && typ == protowire.BytesType:
			c.After, err = d.data(v)
		}
		return err
	})
	return c, err
}

// data decodes an opencdc.v1.Data: raw bytes, a structured map, or nil when
// neither is set. As in a oneof, the last one on the wire wins.
func (d *recordDecoder) data(b []byte) (opencdc.Data, error) {
	var out opencdc.Data
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case dataRaw:
			out = opencdc.RawData(append([]byte{}, v...))
		case dataStructured:
			m, err := d.structure(v)
			if err != nil {
				return err
			}
			out = opencdc.StructuredData(m)
		}
		return nil
	})
	return out, err
}

// structure decodes a google.protobuf.Struct.
func (d *recordDecoder) structure(b []byte) (map[string]any, error) {
	m := map[string]any{}
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != structFields || typ != protowire.BytesType {
			return nil
		}
		var key string
		var value any
		err := fields(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
			if typ != protowire.BytesType {
				return nil
			}
			switch num {
			case entryKey:
				if !utf8.Valid(v) {
					return fmt.Errorf("structured data: %w", errInvalidUTF8)
				}
				key = d.name(v)
			case entryValue:
				var err error
				value, err = d.value(v)
				return err
			}
			return nil
		})
		m[key] = value
		return err
	})
	return m, err
}

// value decodes a google.protobuf.Value the way structpb's AsInterface
// presents it: nil, float64, string, bool, map[string]any or []any.
// Numbers JSON cannot hold become strings, as there.
func (d *recordDecoder) value(b []byte) (any, error) {
	var out any
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error {
		var err error
		switch {
		case num == valueNull && typ == protowire.VarintType:
			out = nil
		case num == valueNumber && typ == protowire.Fixed64Type:
			out = number(math.Float64frombits(n))
		case num == valueString && typ == protowire.BytesType:
			if !utf8.Valid(v) {
				return fmt.Errorf("structured data: %w", errInvalidUTF8)
			}
			out = string(v)
		case num == valueBool && typ == protowire.VarintType:
			out = n != 0
		case num == valueStruct && typ == protowire.BytesType:
			out, err = d.structure(v)
		case num == valueList && typ == protowire.BytesType:
			out, err = d.list(v)
		}
		return err
	})
	return out, err
}

// bytesOrNil copies b; for no bytes, it is nil, as the generated code has
// it for a proto3 bytes field.
func bytesOrNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// number is f, or for the values JSON cannot hold the strings structpb
// gives them.
func number(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

func (d *recordDecoder) list(b []byte) ([]any, error) {
	out := []any{}
	err := fields(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != listValues || typ != protowire.BytesType {
			return nil
		}
		x, err := d.value(v)
		out = append(out, x)
		return err
	})
	return out, err
}

// name returns b as a string, the same string for the same name each time.
func (d *recordDecoder) name(b []byte) string {
	if s, ok := d.names[string(b)]; ok {
		return s
	}
	if d.names == nil || len(d.names) >= maxNames {
		d.names = make(map[string]string, 64)
	}
	s := string(b)
	d.names[s] = s
	return s
}

// fields calls f with each field of the message in b, in wire order: for
// length-delimited fields v is the payload, for varints and fixed-size
// fields n is the value. Groups are skipped.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error) error {
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		var (
			v []byte
			n uint64
		)
		switch typ {
		case protowire.VarintType:
			n, l = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			n, l = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var n32 uint32
			n32, l = protowire.ConsumeFixed32(b)
			n = uint64(n32)
		case protowire.BytesType:
			v, l = protowire.ConsumeBytes(b)
		default:
			l = protowire.ConsumeFieldValue(num, typ, b)
		}
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		if err := f(num, typ, v, n); err != nil {
			return err
		}
	}
	return nil
}
