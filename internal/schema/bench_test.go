package schema

import (
	"context"
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
)

func small() opencdc.StructuredData {
	return opencdc.StructuredData{"id": int64(123456789), "first_name": "Ada", "last_name": "Lovelace"}
}

func wide() opencdc.StructuredData {
	return opencdc.StructuredData{
		"id":         int64(123456789),
		"name":       "Ada Lovelace",
		"email":      "ada@example.com",
		"active":     true,
		"score":      98.5,
		"ratio":      float32(0.25),
		"visits":     int32(42),
		"avatar":     []byte{0x89, 0x50, 0x4e, 0x47},
		"created_at": time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC),
		"note":       nil,
	}
}

// benchmarkCodec measures op, a decode or an encode, with the codec for
// d and d's encoding, in bytes of the encoding.
func benchmarkCodec(b *testing.B, d opencdc.StructuredData, op func(c *Codec, d opencdc.StructuredData, enc []byte) error) {
	c := newCodecForData(b, d)
	enc, err := c.Encode(d)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if err := op(c, d, enc); err != nil {
			b.Fatal(err)
		}
	}
}

func decode(c *Codec, _ opencdc.StructuredData, enc []byte) error {
	_, err := c.Decode(enc)
	return err
}
func encode(c *Codec, d opencdc.StructuredData, _ []byte) error { _, err := c.Encode(d); return err }

func BenchmarkDecode3Fields(b *testing.B)  { benchmarkCodec(b, small(), decode) }
func BenchmarkDecode10Fields(b *testing.B) { benchmarkCodec(b, wide(), decode) }
func BenchmarkEncode3Fields(b *testing.B)  { benchmarkCodec(b, small(), encode) }
func BenchmarkEncode10Fields(b *testing.B) { benchmarkCodec(b, wide(), encode) }

func BenchmarkCodecsGetHit(b *testing.B) {
	ctx := context.Background()
	r := NewInMemory()
	text, err := Extract(small())
	if err != nil {
		b.Fatal(err)
	}
	s, err := r.Create(ctx, "payload", TypeAvro, text)
	if err != nil {
		b.Fatal(err)
	}
	codecs := NewCodecs(r)
	if _, err := codecs.Get(ctx, s.Subject, s.Version); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := codecs.Get(ctx, s.Subject, s.Version); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkCodecsForDataHit(b *testing.B) { benchmarkForData(b, small()) }

// Records with lists or maps are extracted on every call.
func BenchmarkCodecsForDataNested(b *testing.B) {
	benchmarkForData(b, opencdc.StructuredData{"id": int64(1), "tags": []any{"a"}})
}

// benchmarkForData measures ForData for d, once its schema is registered.
func benchmarkForData(b *testing.B, d opencdc.StructuredData) {
	ctx := context.Background()
	codecs := NewCodecs(NewInMemory())
	if _, _, err := codecs.ForData(ctx, "payload", d); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := codecs.ForData(ctx, "payload", d); err != nil {
			b.Fatal(err)
		}
	}
}
