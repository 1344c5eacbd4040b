package wire

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	opencdcv1 "github.com/conduitio/conduit-commons/proto/opencdc/v1"
	connectorv2 "github.com/conduitio/conduit-connector-protocol/proto/connector/v2"
	"github.com/matryer/is"
	"google.golang.org/protobuf/proto"
)

// generated is what the protocol's own conversion and the generated code
// send for records, read back.
func generated(t testing.TB, records []opencdc.Record) ([]opencdc.Record, error) {
	resp := &connectorv2.Source_Run_Response{}
	for _, r := range records {
		p := &opencdcv1.Record{}
		if err := r.ToProto(p); err != nil {
			return nil, err
		}
		resp.Records = append(resp.Records, p)
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		return nil, err
	}
	return readSourceRunResponse(t, b), nil
}

func readSourceRunResponse(t testing.TB, b []byte) []opencdc.Record {
	var resp connectorv2.Source_Run_Response
	if err := proto.Unmarshal(b, &resp); err != nil {
		t.Fatal(err)
	}
	out := make([]opencdc.Record, len(resp.Records))
	for i, p := range resp.Records {
		if err := out[i].FromProto(p); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func encodeRecords() []opencdc.Record {
	records := wireRecords()
	return append(records,
		opencdc.Record{
			Position: opencdc.Position(strings.Repeat("long position ", 40)), // lengths of two bytes
			Key:      opencdc.RawData(strings.Repeat("k", 20000)),            // and three
			Payload: opencdc.Change{After: opencdc.StructuredData{
				"int": 1, "int8": int8(-2), "int16": int16(3), "int32": int32(-4), "int64": int64(-1 << 53), // the last exact doubles
				"uint": uint(5), "uint8": uint8(6), "uint16": uint16(7), "uint32": uint32(8), "uint64": uint64(1 << 53),
				"float32": float32(0.5), "number": json.Number("12.25"), "bytes": []byte{0, 1, 2, 255},
				"nested": map[string]any{"list": []any{int64(1), []byte("x"), map[string]any{"deep": strings.Repeat("d", 300)}}},
			}},
		},
		opencdc.Record{Position: opencdc.Position("nil data"), Key: opencdc.RawData(nil), Payload: opencdc.Change{Before: opencdc.StructuredData(nil)}},
		opencdc.Record{Position: opencdc.Position("negative operation"), Operation: opencdc.Operation(-3)},
	)
}

// Records covering every part of the format encode as the protocol's own
// conversion and the generated code encode them.
func TestSourceRunResponseMatchesProtocol(t *testing.T) {
	is := is.New(t)
	records := encodeRecords()
	want, err := generated(t, records)
	is.NoErr(err)
	b, err := appendSourceRunResponse(nil, records)
	is.NoErr(err)
	got := readSourceRunResponse(t, b)
	is.Equal(len(got), len(want))
	for i := range want {
		is.Equal(got[i], want[i]) // record i
	}
}

// What structpb cannot hold is an error, as it is for the protocol's own
// conversion, and the error names the record and the field.
func TestSourceRunResponseRejectsWhatProtobufCannotHold(t *testing.T) {
	for name, c := range map[string]struct {
		r    opencdc.Record
		want string
	}{
		"struct":          {opencdc.Record{Position: opencdc.Position("p"), Payload: opencdc.Change{After: opencdc.StructuredData{"s": struct{}{}}}}, `record 0 at position "p": payload after: field "s": invalid type struct {}`},
		"string slice":    {opencdc.Record{Key: opencdc.StructuredData{"l": []string{"a"}}}, `key: field "l": invalid type []string`},
		"bad UTF-8 value": {opencdc.Record{Payload: opencdc.Change{Before: opencdc.StructuredData{"s": "\xff"}}}, `payload before: field "s": string field contains invalid UTF-8`},
		"bad UTF-8 key":   {opencdc.Record{Key: opencdc.StructuredData{"\xff": 1}}, `invalid UTF-8`},
		"bad metadata":    {opencdc.Record{Metadata: opencdc.Metadata{"k": "\xff"}}, `metadata "k": string field contains invalid UTF-8`},
		"bad number":      {opencdc.Record{Key: opencdc.StructuredData{"n": json.Number("x")}}, `invalid number format "x"`},
		"list element":    {opencdc.Record{Key: opencdc.StructuredData{"l": []any{1, struct{}{}}}}, `key: field "l": element 1: invalid type struct {}`},
	} {
		t.Run(name, func(t *testing.T) {
			records := []opencdc.Record{c.r}
			if _, err := generated(t, records); err == nil {
				t.Fatal("the protocol's conversion accepts this record: the test is wrong")
			}
			_, err := appendSourceRunResponse(nil, records)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// Where the protocol's conversion rounds an integer to a double or refuses
// a time, the encoder carries text that parses back exactly; everything
// else in the same record is what the protocol's conversion sends.
func TestSourceRunResponseCarriesExactText(t *testing.T) {
	is := is.New(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("", 5*3600+45*60))
	r := opencdc.Record{
		Position: opencdc.Position("p"),
		Key:      opencdc.StructuredData{"id": int64(1<<53 + 1)},
		Payload: opencdc.Change{After: opencdc.StructuredData{
			"min": int64(math.MinInt64), "max": uint64(math.MaxUint64), "int": -(1<<53 + 1), "uint": uint(1<<53 + 1),
			"edge": int64(1 << 53), "at": at, "utc": at.UTC(),
			"nested": map[string]any{"list": []any{int64(math.MaxInt64), at, 1.5}},
		}},
	}
	b, err := appendSourceRunResponse(nil, []opencdc.Record{r})
	is.NoErr(err)
	got := readSourceRunResponse(t, b)
	is.Equal(got[0].Key, opencdc.StructuredData{"id": "9007199254740993"})
	is.Equal(got[0].Payload.After, opencdc.StructuredData{
		"min": "-9223372036854775808", "max": "18446744073709551615", "int": "-9007199254740993", "uint": "9007199254740993",
		"edge": float64(1 << 53), "at": "2026-01-02T03:04:05.123456789+05:45", "utc": "2026-01-01T21:19:05.123456789Z",
		"nested": map[string]any{"list": []any{"9223372036854775807", "2026-01-02T03:04:05.123456789+05:45", 1.5}},
	})
	parsed, err := time.Parse(time.RFC3339Nano, got[0].Payload.After.(opencdc.StructuredData)["at"].(string))
	is.NoErr(err)
	is.True(parsed.Equal(at))
}

// Whatever records a request decodes to encode to the same records.
func FuzzSourceRunResponse(f *testing.F) {
	f.Add(marshalRequest(f, encodeRecords()))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d RecordDecoder
		records, err := d.RunRequest(b, nil)
		if err != nil {
			return
		}
		want, err := generated(t, records)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := appendSourceRunResponse(nil, records)
		if err != nil {
			t.Fatal(err)
		}
		if got := readSourceRunResponse(t, enc); (len(got) > 0 || len(want) > 0) && !reflect.DeepEqual(got, want) {
			t.Fatalf("encoded\n%v\nthe generated code encodes\n%v", got, want)
		}
	})
}

// BenchmarkEncodeSourceRunResponse measures encoding a message of 1000
// records with the protocol's own conversion and with the encoder, per
// record.
func BenchmarkEncodeSourceRunResponse(b *testing.B) {
	// Numbers are of the Go types a source has them in.
	records := benchRecords(opencdc.OperationSnapshot, func(i int) any { return int64(i) }, func(i int) any { return int32(i % 1000) })
	b.Run("protocol", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp := &connectorv2.Source_Run_Response{Records: make([]*opencdcv1.Record, len(records))}
			for i, r := range records {
				resp.Records[i] = &opencdcv1.Record{}
				if err := r.ToProto(resp.Records[i]); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := proto.Marshal(resp); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(records)), "ns/record")
	})
	b.Run("encoder", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte // reused, as the stream reuses its buffers
		for b.Loop() {
			var err error
			if buf, err = appendSourceRunResponse(buf[:0], records); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(records)), "ns/record")
	})
}

// benchRecords returns the 1000 records of a benchmark's message, op
// records of one table, each with a key and three payload fields; id and n
// make the two numbers.
func benchRecords(op opencdc.Operation, id, n func(i int) any) []opencdc.Record {
	records := make([]opencdc.Record, 1000)
	for i := range records {
		records[i] = opencdc.Record{
			Position:  opencdc.Position(fmt.Sprint(i)),
			Operation: op,
			Metadata:  opencdc.Metadata{"opencdc.collection": "bench"},
			Key:       opencdc.StructuredData{"id": id(i)},
			Payload: opencdc.Change{After: opencdc.StructuredData{
				"a": fmt.Sprint("row-", i), "b": "a text column of moderate length", "n": n(i),
			}},
		}
	}
	return records
}
