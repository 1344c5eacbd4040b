package schema

import (
	"errors"
	"maps"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	cavro "github.com/conduitio/conduit-commons/schema/avro"
	"github.com/matryer/is"
)

// sample holds a value of every Go type a structured record carries, and
// what Decode returns for it.
func sample() (in, want opencdc.StructuredData) {
	ts := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.FixedZone("x", 3600))
	in = opencdc.StructuredData{
		"bool":     true,
		"int":      42,
		"int32":    int32(math.MinInt32),
		"int64":    int64(1)<<53 + 1,
		"int64max": int64(math.MaxInt64),
		"float32":  float32(1.5),
		"float64":  math.Pi,
		"string":   "héllo",
		"bytes":    []byte{0, 1, 255},
		"time":     ts,
		"nil":      nil,
		"nested": opencdc.StructuredData{
			"id":   int64(7),
			"name": "n",
		},
		"map":   map[string]any{"a": int64(1), "b": "x", "c": nil},
		"list":  []any{int64(1), "two", nil},
		"ints":  []int64{1, 2, 3},
		"empty": []any{},
	}
	// What Decode returns differs from what was encoded only where Avro
	// has no type of its own for the Go one.
	want = maps.Clone(in)
	want["int"] = int64(42)
	want["int32"] = int(math.MinInt32)
	want["time"] = ts.Truncate(time.Microsecond).UTC()
	want["nested"] = map[string]any{"id": int64(7), "name": "n"}
	want["ints"] = []any{int64(1), int64(2), int64(3)}
	want["empty"] = []any(nil) // as conduit-commons decodes it
	return in, want
}

func newCodecForData(t testing.TB, d opencdc.StructuredData) *Codec {
	t.Helper()
	is := is.New(t)
	text, err := Extract(d)
	is.NoErr(err)
	c, err := NewCodec(Schema{Subject: "s", Version: 1, Type: TypeAvro, Bytes: text})
	is.NoErr(err)
	return c
}

func TestExtractMatchesCommons(t *testing.T) {
	is := is.New(t)
	in, _ := sample()
	got, err := Extract(in)
	is.NoErr(err)
	srd, err := cavro.SerdeForType(in)
	is.NoErr(err)
	is.Equal(string(got), srd.String())
}

func TestRoundTripWithCommons(t *testing.T) {
	in, want := sample()
	text, err := Extract(in)
	if err != nil {
		t.Fatal(err)
	}
	srd, err := cavro.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	c := newCodecForData(t, in)

	t.Run("ours to commons", func(t *testing.T) {
		is := is.New(t)
		b, err := c.Encode(in)
		is.NoErr(err)
		var got opencdc.StructuredData
		is.NoErr(srd.Unmarshal(b, &got))
		is.Equal(got, want)
	})
	t.Run("commons to ours", func(t *testing.T) {
		is := is.New(t)
		in, _ := sample() // commons may rewrite its input
		b, err := srd.Marshal(in)
		is.NoErr(err)
		got, err := c.Decode(b)
		is.NoErr(err)
		is.Equal(got, want)
	})
	t.Run("ours to ours", func(t *testing.T) {
		is := is.New(t)
		b, err := c.Encode(in)
		is.NoErr(err)
		got, err := c.Decode(b)
		is.NoErr(err)
		is.Equal(got, want)
		again, err := c.Encode(got)
		is.NoErr(err)
		is.Equal(len(again), len(b))
	})
	t.Run("schema extracted by commons", func(t *testing.T) {
		is := is.New(t)
		in, _ := sample()
		srd, err := cavro.SerdeForType(in)
		is.NoErr(err)
		b, err := srd.Marshal(in)
		is.NoErr(err)
		c, err := NewCodec(Schema{Type: TypeAvro, Bytes: []byte(srd.String())})
		is.NoErr(err)
		got, err := c.Decode(b)
		is.NoErr(err)
		is.Equal(got, want)
	})
}

// Each type alone, so a failure names it.
func TestRoundTripPerType(t *testing.T) {
	in, want := sample()
	for k, v := range in {
		t.Run(k, func(t *testing.T) {
			is := is.New(t)
			d := opencdc.StructuredData{k: v}
			c := newCodecForData(t, d)
			srd, err := cavro.Parse(c.Schema().Bytes)
			is.NoErr(err)

			b, err := c.Encode(d)
			is.NoErr(err)
			var theirs opencdc.StructuredData
			is.NoErr(srd.Unmarshal(b, &theirs))
			is.Equal(theirs, opencdc.StructuredData{k: want[k]})

			b2, err := srd.Marshal(opencdc.StructuredData{k: v})
			is.NoErr(err)
			if k != "map" { // map entries come in Go's random order
				is.Equal(b2, b)
			}
			ours, err := c.Decode(b2)
			is.NoErr(err)
			is.Equal(ours, opencdc.StructuredData{k: want[k]})
		})
	}
}

func TestEncodeLeavesInputAlone(t *testing.T) {
	is := is.New(t)
	// A map whose values may be lists: such values are wrapped before
	// marshaling (conduit-commons' serde does it in place).
	in := opencdc.StructuredData{"m": map[string]any{"l": []any{int64(1)}, "s": "x"}}
	c := newCodecForData(t, in)
	is.True(c.wrapped)
	b, err := c.Encode(in)
	is.NoErr(err)
	is.Equal(in, opencdc.StructuredData{"m": map[string]any{"l": []any{int64(1)}, "s": "x"}})
	got, err := c.Decode(b)
	is.NoErr(err)
	is.Equal(got, opencdc.StructuredData{"m": map[string]any{"l": []any{int64(1)}, "s": "x"}})
}

func TestDecodeTypes(t *testing.T) {
	is := is.New(t)
	text := `{"type":"record","name":"r","fields":[
		{"name":"u","type":["int","string"]},
		{"name":"n","type":["null","long"]},
		{"name":"date","type":{"type":"int","logicalType":"date"}},
		{"name":"ms","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"tm","type":{"type":"int","logicalType":"time-millis"}},
		{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
		{"name":"fx","type":{"type":"fixed","name":"F","size":2}},
		{"name":"tu","type":{"type":"long","logicalType":"time-micros"}},
		{"name":"lts","type":{"type":"long","logicalType":"local-timestamp-micros"}},
		{"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
		{"name":"ndec","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}]},
		{"name":"uuid","type":{"type":"string","logicalType":"uuid"}}]}`
	c, err := NewCodec(Schema{Type: TypeAvro, Bytes: []byte(text)})
	is.NoErr(err)
	at := time.Date(2024, 1, 2, 3, 4, 5, 6000000, time.UTC)
	in := opencdc.StructuredData{
		"u": "s", "n": int64(3), "date": at.Truncate(24 * time.Hour), "ms": at,
		"tm": 1500 * time.Millisecond, "e": "B", "fx": [2]byte{1, 2},
		"tu": 1500 * time.Microsecond, "lts": at, "dec": big.NewRat(12345, 100),
		"ndec": big.NewRat(-1, 4), "uuid": "0b9e3c4e-8d1f-4a53-9f5e-1c2d3e4f5a6b",
	}
	b, err := c.Encode(in)
	is.NoErr(err)
	got, err := c.Decode(b)
	is.NoErr(err)
	lts := got["lts"].(time.Time)
	is.True(lts.Equal(at))
	is.Equal(lts.Location(), time.Local) // local-timestamp has no zone
	delete(got, "lts")
	delete(in, "lts")
	for _, k := range []string{"dec", "ndec"} {
		is.Equal(got[k].(*big.Rat).Cmp(in[k].(*big.Rat)), 0) // k
		delete(got, k)
		delete(in, k)
	}
	for k := range in {
		is.Equal(got[k], in[k]) // k
	}
	is.Equal(got, in)
}

func TestDecodeRejects(t *testing.T) {
	c := newCodecForData(t, opencdc.StructuredData{"id": int64(1), "name": "x"})
	good, err := c.Encode(opencdc.StructuredData{"id": int64(1), "name": "x"})
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)-1],
		"trailing":  append(append([]byte{}, good...), 0),
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			_, err := c.Decode(b)
			is.True(err != nil)
		})
	}
}

func TestDecodeBoundsArrays(t *testing.T) {
	is := is.New(t)
	c, err := NewCodec(Schema{Type: TypeAvro, Bytes: []byte(
		`{"type":"record","name":"r","fields":[{"name":"l","type":{"type":"array","items":"null"}}]}`)})
	is.NoErr(err)
	// one block claiming 2^40 null elements, which take no bytes
	_, err = c.Decode([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0})
	is.True(err != nil)
}

func TestNewCodecRejects(t *testing.T) {
	for name, s := range map[string]Schema{
		"not avro":  {Type: 7, Bytes: []byte(`{"type":"record","name":"r","fields":[]}`)},
		"bad text":  {Type: TypeAvro, Bytes: []byte(`{"type":`)},
		"primitive": {Type: TypeAvro, Bytes: []byte(`"string"`)},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			_, err := NewCodec(s)
			is.True(err != nil)
			if name != "not avro" {
				is.True(errors.Is(err, ErrInvalidSchema))
			}
		})
	}
}

// Unions whose branches hamba/avro cannot name by Go type travel wrapped;
// Decode unwraps them and Encode wraps them again.
func TestUnionsOfNamedAndContainerTypes(t *testing.T) {
	is := is.New(t)
	text := `{"type":"record","name":"r","fields":[
		{"name":"rec","type":["null",{"type":"record","name":"in","fields":[{"name":"a","type":"long"}]}]},
		{"name":"list","type":["null","long",{"type":"array","items":["null","string",{"type":"map","values":"long"}]}]},
		{"name":"m","type":{"type":"map","values":["null","string",{"type":"array","items":"long"}]}},
		{"name":"en","type":["null",{"type":"enum","name":"E","symbols":["A","B"]}]},
		{"name":"fx","type":["null",{"type":"fixed","name":"F","size":2}]},
		{"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-micros"}]}]}`
	c, err := NewCodec(Schema{Type: TypeAvro, Bytes: []byte(text)})
	is.NoErr(err)
	is.True(c.wrapped)
	at := time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)
	for _, in := range []opencdc.StructuredData{
		{
			"rec":  map[string]any{"a": int64(1)},
			"list": []any{"x", nil, map[string]any{"k": int64(2)}},
			"m":    map[string]any{"s": "y", "l": []any{int64(3)}, "n": nil},
			"en":   "B",
			"fx":   [2]byte{1, 2},
			"ts":   at,
		},
		{"rec": nil, "list": int64(5), "m": map[string]any{}, "en": nil, "fx": nil, "ts": nil},
	} {
		b, err := c.Encode(in)
		is.NoErr(err)
		got, err := c.Decode(b)
		is.NoErr(err)
		is.Equal(got, in)
	}
}

// Where conduit-commons' serde handles a union, it agrees with ours byte
// for byte and value for value.
func TestUnionsAgainstCommons(t *testing.T) {
	is := is.New(t)
	text := `{"type":"record","name":"r","fields":[
		{"name":"m","type":{"type":"map","values":["null","string",{"type":"array","items":"long"}]}},
		{"name":"l","type":{"type":"array","items":["null","long",{"type":"map","values":"string"}]}},
		{"name":"n","type":["null","long"]}]}`
	c, err := NewCodec(Schema{Type: TypeAvro, Bytes: []byte(text)})
	is.NoErr(err)
	srd, err := cavro.Parse([]byte(text))
	is.NoErr(err)
	// Avro writes a map's entries in Go's iteration order, which varies
	// from run to run, so only maps of one entry compare byte for byte.
	in := func() opencdc.StructuredData {
		return opencdc.StructuredData{
			"m": map[string]any{"l": []any{int64(3), int64(4)}},
			"l": []any{int64(1), nil, map[string]any{"a": "b"}},
			"n": nil,
		}
	}
	ours, err := c.Encode(in())
	is.NoErr(err)
	theirs, err := srd.Marshal(in())
	is.NoErr(err)
	is.Equal(ours, theirs)

	got, err := c.Decode(theirs)
	is.NoErr(err)
	is.Equal(got, in())
	var back opencdc.StructuredData
	is.NoErr(srd.Unmarshal(ours, &back))
	is.Equal(back, in())
}

func TestDecodeSharesNoMemoryWithInput(t *testing.T) {
	is := is.New(t)
	in := opencdc.StructuredData{"s": "hello", "b": []byte("bytes")}
	c := newCodecForData(t, in)
	b, err := c.Encode(in)
	is.NoErr(err)
	got, err := c.Decode(b)
	is.NoErr(err)
	for i := range b {
		b[i] = 'X'
	}
	is.Equal(got, in)
}
