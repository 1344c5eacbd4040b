package wire

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/conduitio/conduit-commons/opencdc"
	"google.golang.org/protobuf/encoding/protowire"
)

// RecordDecoder turns the wire form of a destination's Run request straight
// into records, the same records that unmarshalling the generated messages
// and converting them with opencdc's FromProto gives, without the
// intermediate messages. Structured data dominates a destination's CPU
// time otherwise: each field is a google.protobuf.Value before it is a map
// entry.
//
// A decoder remembers the field names it has seen, so that records of the
// same shape share their keys' strings. It is not safe for concurrent use.
type RecordDecoder struct {
	names map[string]string

	// fields and values hold a structure's fields and a list's values
	// while they are decoded, so that its map or slice is made at its
	// size once it is known, instead of grown field by field. Nested ones
	// stack up behind their parent's; each is cleared when it is made.
	fields []structField
	values []any
}

type structField struct {
	key   string
	value any
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
func (d *RecordDecoder) RunRequest(b []byte, records []opencdc.Record) ([]opencdc.Record, error) {
	err := Fields(b, func(f Field) error {
		if f.Num != runRequestRecords || f.Type != protowire.BytesType {
			return nil
		}
		var r opencdc.Record
		if err := d.record(f.Bytes, &r); err != nil {
			return fmt.Errorf("record %d: %w", len(records), err)
		}
		records = append(records, r)
		return nil
	})
	return records, err
}

func (d *RecordDecoder) record(b []byte, r *opencdc.Record) error {
	return Fields(b, func(f Field) error {
		var err error
		switch {
		case f.Num == recordPosition && f.Type == protowire.BytesType:
			r.Position = bytesOrNil(f.Bytes)
		case f.Num == recordOperation && f.Type == protowire.VarintType:
			r.Operation = opencdc.Operation(int32(f.Value))
		case f.Num == recordMetadata:
			if r.Metadata == nil {
				r.Metadata = opencdc.Metadata{} // even for a wrong wire type, as the generated code
			}
			if f.Type == protowire.BytesType {
				err = d.metadataEntry(f.Bytes, r.Metadata)
			}
		case f.Num == recordKey && f.Type == protowire.BytesType:
			r.Key, err = d.data(f.Bytes)
		case f.Num == recordPayload && f.Type == protowire.BytesType:
			r.Payload, err = d.change(f.Bytes)
		}
		return err
	})
}

func (d *RecordDecoder) metadataEntry(b []byte, m opencdc.Metadata) error {
	var key, value string
	err := Fields(b, func(f Field) error {
		if f.Type != protowire.BytesType || (f.Num != entryKey && f.Num != entryValue) {
			return nil
		}
		if !utf8.Valid(f.Bytes) {
			return fmt.Errorf("metadata: %w", errInvalidUTF8)
		}
		if f.Num == entryKey {
			key = d.name(f.Bytes)
		} else {
			value = string(f.Bytes)
		}
		return nil
	})
	m[key] = value
	return err
}

func (d *RecordDecoder) change(b []byte) (opencdc.Change, error) {
	var c opencdc.Change
	err := Fields(b, func(f Field) error {
		var err error
		switch {
		case f.Num == changeBefore && f.Type == protowire.BytesType:
			c.Before, err = d.data(f.Bytes)
		case f.Num == changeAfter && f.Type == protowire.BytesType:
			c.After, err = d.data(f.Bytes)
		}
		return err
	})
	return c, err
}

// data decodes an opencdc.v1.Data: raw bytes, a structured map, or nil when
// neither is set. As in a oneof, the last one on the wire wins.
func (d *RecordDecoder) data(b []byte) (opencdc.Data, error) {
	var out opencdc.Data
	err := Fields(b, func(f Field) error {
		if f.Type != protowire.BytesType {
			return nil
		}
		switch f.Num {
		case dataRaw:
			out = opencdc.RawData(append([]byte{}, f.Bytes...))
		case dataStructured:
			m, err := d.structure(f.Bytes)
			if err != nil {
				return err
			}
			out = opencdc.StructuredData(m)
		}
		return nil
	})
	return out, err
}

// structure decodes a google.protobuf.Struct. Its fields go in the map in
// wire order, so that of a name given twice the last wins.
func (d *RecordDecoder) structure(b []byte) (map[string]any, error) {
	start := len(d.fields)
	err := Fields(b, func(f Field) error {
		if f.Num != structFields || f.Type != protowire.BytesType {
			return nil
		}
		var key string
		var value any
		err := Fields(f.Bytes, func(f Field) error {
			if f.Type != protowire.BytesType {
				return nil
			}
			switch f.Num {
			case entryKey:
				if !utf8.Valid(f.Bytes) {
					return fmt.Errorf("structured data: %w", errInvalidUTF8)
				}
				key = d.name(f.Bytes)
			case entryValue:
				var err error
				value, err = d.value(f.Bytes)
				return err
			}
			return nil
		})
		d.fields = append(d.fields, structField{key, value})
		return err
	})
	fields := d.fields[start:]
	m := make(map[string]any, len(fields))
	for _, f := range fields {
		m[f.key] = f.value
	}
	clear(fields) // nothing of the records stays reachable from the decoder
	d.fields = d.fields[:start]
	return m, err
}

// value decodes a google.protobuf.Value the way structpb's AsInterface
// presents it: nil, float64, string, bool, map[string]any or []any.
// Numbers JSON cannot hold become strings, as there.
func (d *RecordDecoder) value(b []byte) (any, error) {
	var out any
	err := Fields(b, func(f Field) error {
		var err error
		switch {
		case f.Num == valueNull && f.Type == protowire.VarintType:
			out = nil
		case f.Num == valueNumber && f.Type == protowire.Fixed64Type:
			out = number(math.Float64frombits(f.Value))
		case f.Num == valueString && f.Type == protowire.BytesType:
			if !utf8.Valid(f.Bytes) {
				return fmt.Errorf("structured data: %w", errInvalidUTF8)
			}
			out = string(f.Bytes)
		case f.Num == valueBool && f.Type == protowire.VarintType:
			out = f.Value != 0
		case f.Num == valueStruct && f.Type == protowire.BytesType:
			out, err = d.structure(f.Bytes)
		case f.Num == valueList && f.Type == protowire.BytesType:
			out, err = d.list(f.Bytes)
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
	case f >= 0 && f < float64(len(wholeNumbers)) && f == math.Trunc(f) && !math.Signbit(f):
		return wholeNumbers[int(f)]
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

// wholeNumbers are the whole numbers from 0 to 1023, each boxed once:
// putting a float64 in an interface allocates, and small whole numbers
// (counts, codes, ages, quantities) are most of the numbers rows carry.
// Records may share them, as an interface's value cannot be changed.
var wholeNumbers = func() (a [1024]any) {
	for i := range a {
		a[i] = float64(i)
	}
	return a
}()

func (d *RecordDecoder) list(b []byte) ([]any, error) {
	start := len(d.values)
	err := Fields(b, func(f Field) error {
		if f.Num != listValues || f.Type != protowire.BytesType {
			return nil
		}
		x, err := d.value(f.Bytes)
		d.values = append(d.values, x)
		return err
	})
	out := append([]any{}, d.values[start:]...)
	clear(d.values[start:])
	d.values = d.values[:start]
	return out, err
}

// name returns b as a string, the same string for the same name each time.
func (d *RecordDecoder) name(b []byte) string {
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
