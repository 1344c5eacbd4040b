package wire

import (
	"errors"
	"io"
	"math"
	"reflect"
	"testing"

	"github.com/matryer/is"
	"google.golang.org/protobuf/encoding/protowire"
)

// message holds one field of every wire type, a group among them.
func message() []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 300)
	b = protowire.AppendTag(b, 2, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(1.5))
	b = protowire.AppendTag(b, 3, protowire.Fixed32Type)
	b = protowire.AppendFixed32(b, 7)
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte("content"))
	b = protowire.AppendTag(b, 5, protowire.StartGroupType)
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	b = protowire.AppendTag(b, 5, protowire.EndGroupType)
	b = protowire.AppendTag(b, 6, protowire.BytesType)
	return protowire.AppendBytes(b, nil)
}

func TestFields(t *testing.T) {
	is := is.New(t)
	var got []Field
	is.NoErr(Fields(message(), func(f Field) error {
		got = append(got, f)
		return nil
	}))
	is.Equal(got, []Field{
		{Num: 1, Type: protowire.VarintType, Value: 300},
		{Num: 2, Type: protowire.Fixed64Type, Value: math.Float64bits(1.5)},
		{Num: 3, Type: protowire.Fixed32Type, Value: 7},
		{Num: 4, Type: protowire.BytesType, Bytes: []byte("content")},
		{Num: 5, Type: protowire.StartGroupType}, // consumed whole, unread
		{Num: 6, Type: protowire.BytesType, Bytes: []byte{}},
	})

	// A message cut inside a field fails with protowire's error.
	is.Equal(Fields(message()[:2], func(Field) error { return nil }), io.ErrUnexpectedEOF)

	// f's error ends the scan and is returned.
	stop := errors.New("stop")
	calls := 0
	is.Equal(Fields(message(), func(Field) error { calls++; return stop }), stop)
	is.Equal(calls, 1)
}

// Fields agrees with protowire's own parser about any input: the same
// fields and values, and an error exactly where it finds one.
func FuzzFields(f *testing.F) {
	f.Add(message())
	f.Add([]byte{0x0a, 0x05, 'a'})              // a length beyond the message
	f.Add([]byte{0x0c})                         // an end-group tag alone
	f.Add([]byte{0x08, 0xff, 0xff, 0xff, 0xff}) // a truncated varint
	f.Fuzz(func(t *testing.T, b []byte) {
		var want []Field
		var wantErr error
		for rest := b; len(rest) > 0; {
			num, typ, n := protowire.ConsumeField(rest)
			if n < 0 {
				wantErr = protowire.ParseError(n)
				break
			}
			_, _, tag := protowire.ConsumeTag(rest)
			want = append(want, field(num, typ, rest[tag:n]))
			rest = rest[n:]
		}
		var got []Field
		err := Fields(b, func(f Field) error {
			got = append(got, f)
			return nil
		})
		if !errors.Is(err, wantErr) || (err == nil) != (wantErr == nil) {
			t.Fatalf("Fields returned %v, protowire's parser %v", err, wantErr)
		}
		if len(got) != len(want) {
			t.Fatalf("Fields read %d fields, protowire's parser %d", len(got), len(want))
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("field %d: Fields read %+v, protowire's parser %+v", i, got[i], want[i])
			}
		}
	})
}

// field is what Fields should make of the field num of type typ whose
// value, after the tag, protowire's parser found to be v.
func field(num protowire.Number, typ protowire.Type, v []byte) Field {
	f := Field{Num: num, Type: typ}
	switch typ {
	case protowire.VarintType:
		f.Value, _ = protowire.ConsumeVarint(v)
	case protowire.Fixed32Type:
		v32, _ := protowire.ConsumeFixed32(v)
		f.Value = uint64(v32)
	case protowire.Fixed64Type:
		f.Value, _ = protowire.ConsumeFixed64(v)
	case protowire.BytesType:
		f.Bytes, _ = protowire.ConsumeBytes(v)
	}
	return f
}
