package plugin

import (
	"hash/maphash"
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
)

// keyHash gives a key of plain strings, which it hashes without encoding
// it, the hash of its JSON, as it gives every other key: two keys that
// encode alike share a lane whichever way each was hashed.
func TestKeyHashPlainIsJSON(t *testing.T) {
	for _, k := range []opencdc.StructuredData{
		{"id": "1"},
		{"id": ""},
		{"b": "2", "a": "1", "c": "x y\x7f"},
		{"name": "Zoë ☃ 𝄞", "ключ": "значение"},
		{"1": "a", "2": "b", "3": "c", "4": "d", "5": "e", "6": "f", "7": "g", "8": "h"},
	} {
		h, ok := plainKeyHash(k)
		if !ok {
			t.Fatalf("%v: not plain", k)
		}
		if want := max(maphash.Bytes(keySeed, k.Bytes()), 1); h != want || keyHash(opencdc.Record{Key: k}) != want {
			t.Errorf("%v: hash %x, its JSON's %x", k, h, want)
		}
	}
	for _, k := range []opencdc.StructuredData{
		{"id": 1},
		{"id": "a\"b"},
		{"id": "<tag>"},
		{"id": "a&b"},
		{"id": "line\nbreak"},
		{"id": "bad\xffutf8"},
		{"id": "\u2028"},
		{"i<d": "1"},
		{"id": []byte("1")},
		{"id": map[string]any{"x": "1"}},
		{"1": "a", "2": "b", "3": "c", "4": "d", "5": "e", "6": "f", "7": "g", "8": "h", "9": "i"},
	} {
		if _, ok := plainKeyHash(k); ok {
			t.Errorf("%v: hashed as plain", k)
		}
	}
	// A []byte encodes as a base64 string: the same JSON as that string.
	a, b := opencdc.StructuredData{"id": []byte("1")}, opencdc.StructuredData{"id": "MQ=="}
	if keyHash(opencdc.Record{Key: a}) != keyHash(opencdc.Record{Key: b}) {
		t.Errorf("%v and %v encode alike and hash apart", a, b)
	}
}

func BenchmarkKeyHash(b *testing.B) {
	r := opencdc.Record{Key: opencdc.StructuredData{"id": "123456"}}
	b.ReportAllocs()
	for b.Loop() {
		keyHash(r)
	}
}
