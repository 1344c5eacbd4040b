package schema

import (
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
)

var fuzzSchemas = []string{
	`{"type":"record","name":"r","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"ok","type":"boolean"}]}`,
	`{"type":"record","name":"r","fields":[
		{"name":"b","type":"bytes"},{"name":"f","type":"float"},{"name":"d","type":"double"},{"name":"i","type":"int"},
		{"name":"t","type":{"type":"long","logicalType":"timestamp-micros"}},
		{"name":"n","type":["null","string"]},
		{"name":"l","type":{"type":"array","items":["null","long","string"]}},
		{"name":"m","type":{"type":"map","values":["null","long",{"type":"array","items":"long"}]}}]}`,
	`{"type":"record","name":"r","fields":[
		{"name":"rec","type":["null",{"type":"record","name":"in","fields":[{"name":"a","type":"long"},{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}}]}]},
		{"name":"nulls","type":{"type":"array","items":"null"}},
		{"name":"fx","type":{"type":"fixed","name":"F","size":3}}]}`,
}

// FuzzDecode feeds arbitrary bytes to Decode under a few schemas: it must
// not panic, and what it accepts must encode, to bytes that decode again.
func FuzzDecode(f *testing.F) {
	codecs := make([]*Codec, len(fuzzSchemas))
	for i, text := range fuzzSchemas {
		c, err := NewCodec(Schema{Type: TypeAvro, Bytes: []byte(text)})
		if err != nil {
			f.Fatal(err)
		}
		codecs[i] = c
	}
	seeds := []opencdc.StructuredData{
		{"id": int64(-5), "name": "ann", "ok": true},
		{
			"b": []byte{1}, "f": float32(1), "d": 2.0, "i": 3, "t": time.UnixMicro(7).UTC(), "n": "x",
			"l": []any{nil, int64(1), "s"}, "m": map[string]any{"k": []any{int64(1)}},
		},
		{"rec": map[string]any{"a": int64(1), "e": "B"}, "nulls": []any{nil, nil}, "fx": [3]byte{1, 2, 3}},
	}
	for i, d := range seeds {
		b, err := codecs[i].Encode(d)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b)
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		c := codecs[int(which)%len(codecs)]
		d, err := c.Decode(b)
		if err != nil {
			return
		}
		again, err := c.Encode(d)
		if err != nil {
			t.Fatalf("decoded %#v from %x, which does not encode: %v", d, b, err)
		}
		d2, err := c.Decode(again)
		if err != nil {
			t.Fatalf("re-encoded %x does not decode: %v", again, err)
		}
		if len(d2) != len(d) {
			t.Fatalf("decoded %#v, then %#v", d, d2)
		}
	})
}
