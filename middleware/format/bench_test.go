package format

import (
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
)

// benchRecord is the benchmarks' record: three structured fields, as the
// generator makes them.
func benchRecord() opencdc.Record {
	return opencdc.Record{
		Position:  opencdc.Position("generator-123456"),
		Operation: opencdc.OperationCreate,
		Metadata: opencdc.Metadata{
			opencdc.MetadataReadAt:     readAt,
			opencdc.MetadataCollection: "users",
		},
		Key:     opencdc.StructuredData{"id": 123456},
		Payload: opencdc.Change{After: opencdc.StructuredData{"id": 123456, "name": "ann", "score": 9.5}},
	}
}

func benchmarkFormat(b *testing.B, name string) {
	s, err := New(name, "")
	if err != nil {
		b.Fatal(err)
	}
	rec := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Serialize(rec); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenCDCJSON(b *testing.B)  { benchmarkFormat(b, OpenCDCJSON) }
func BenchmarkDebeziumJSON(b *testing.B) { benchmarkFormat(b, DebeziumJSON) }

// BenchmarkRecordBytes is the reference: conduit-commons' JSON encoding,
// what Record.Bytes does with no serializer set (and what the incumbent's
// opencdc/json does).
func BenchmarkRecordBytes(b *testing.B) {
	rec := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		_ = rec.Bytes()
	}
}
