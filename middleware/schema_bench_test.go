package middleware

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/internal/schema"
)

// benchBatch is the records per Write or ReadBatch in the schema benchmarks.
const benchBatch = 1000

// benchShapes are the payloads the schema benchmarks run with: three fields,
// as the generator makes them in the published benchmarks, and ten of mixed
// types.
var benchShapes = []struct {
	name    string
	payload func(i int) opencdc.StructuredData
}{
	{"3fields", func(i int) opencdc.StructuredData {
		return opencdc.StructuredData{"id": int64(i), "first_name": "Ada", "last_name": "Lovelace"}
	}},
	{"10fields", func(i int) opencdc.StructuredData {
		return opencdc.StructuredData{
			"id":         int64(i),
			"name":       "Ada Lovelace",
			"email":      "ada@example.com",
			"active":     i%2 == 0,
			"score":      98.5,
			"ratio":      float32(0.25),
			"visits":     int32(i % 1000),
			"avatar":     []byte{0x89, 0x50, 0x4e, 0x47},
			"created_at": time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC),
			"note":       nil,
		}
	}},
}

// benchRecord is record i of a source: a structured key and payload, and
// the metadata a source sets on every record.
func benchRecord(i int, payload func(int) opencdc.StructuredData) opencdc.Record {
	return opencdc.Record{
		Position:  opencdc.Position(strconv.Itoa(i)),
		Operation: opencdc.OperationCreate,
		Metadata:  opencdc.Metadata{opencdc.MetadataCollection: "users"},
		Key:       opencdc.StructuredData{"id": int64(i)},
		Payload:   opencdc.Change{After: payload(i)},
	}
}

// batchSource makes a fresh batch of structured records on every ReadBatch,
// as a source does.
type batchSource struct {
	listSource
	payload func(int) opencdc.StructuredData
	next    int
}

func (s *batchSource) ReadBatch(_ context.Context, max int) ([]opencdc.Record, error) {
	recs := make([]opencdc.Record, max)
	for i := range recs {
		recs[i] = benchRecord(s.next, s.payload)
		s.next++
	}
	return recs, nil
}

// BenchmarkDecodeSchemas measures a Write of a batch of Avro keys and
// payloads through DecodeSchemas into a destination that does nothing.
func BenchmarkDecodeSchemas(b *testing.B) {
	for _, shape := range benchShapes {
		b.Run(shape.name, func(b *testing.B) {
			ctx := b.Context()
			reg := schema.NewInMemory()
			src := encodeWith(reg, Subjects{Key: "key", Payload: "payload", Context: "conn-1"})(&batchSource{payload: shape.payload})
			recs, err := src.ReadBatch(ctx, benchBatch)
			if err != nil {
				b.Fatal(err)
			}
			dst := decodeWith(reg, true, true)(base{})
			b.ReportAllocs()
			for b.Loop() {
				if n, err := dst.Write(ctx, recs); err != nil || n != len(recs) {
					b.Fatal(n, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/record")
		})
	}
}

// BenchmarkEncodeSchemas measures a ReadBatch through EncodeSchemas from a
// source that makes structured records; BenchmarkEncodeSchemasSource is the
// source alone.
func BenchmarkEncodeSchemas(b *testing.B) {
	for _, shape := range benchShapes {
		b.Run(shape.name, func(b *testing.B) {
			src := encodeWith(schema.NewInMemory(), Subjects{Key: "key", Payload: "payload", Context: "conn-1"})(&batchSource{payload: shape.payload})
			benchmarkReadBatch(b, src)
		})
	}
}

func BenchmarkEncodeSchemasSource(b *testing.B) {
	for _, shape := range benchShapes {
		b.Run(shape.name, func(b *testing.B) {
			benchmarkReadBatch(b, &batchSource{payload: shape.payload})
		})
	}
}

func benchmarkReadBatch(b *testing.B, r interface {
	ReadBatch(context.Context, int) ([]opencdc.Record, error)
}) {
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		recs, err := r.ReadBatch(ctx, benchBatch)
		if err != nil || len(recs) != benchBatch {
			b.Fatal(len(recs), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/record")
}
