package wire

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
	opencdcv1 "github.com/conduitio/conduit-commons/proto/opencdc/v1"
	"github.com/conduitio/conduit-connector-protocol/pconnector/v2/fromproto"
	connectorv2 "github.com/conduitio/conduit-connector-protocol/proto/connector/v2"
	"github.com/matryer/is"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// wireRecords are records covering every part of the format.
func wireRecords() []opencdc.Record {
	return []opencdc.Record{
		{},
		{Position: opencdc.Position("p1"), Operation: opencdc.OperationCreate},
		{
			Position:  opencdc.Position("p2"),
			Operation: opencdc.OperationUpdate,
			Metadata:  opencdc.Metadata{"opencdc.collection": "users", "": "empty key", "x": ""},
			Key:       opencdc.RawData("k"),
			Payload:   opencdc.Change{Before: opencdc.RawData(`{"a":1}`), After: opencdc.RawData{}},
		},
		{
			Position:  opencdc.Position{},
			Operation: opencdc.OperationDelete,
			Key:       opencdc.StructuredData{"id": 7.0, "tenant": "ü"},
		},
		{
			Position:  opencdc.Position("p4"),
			Operation: opencdc.OperationSnapshot,
			Key:       opencdc.StructuredData{},
			Payload: opencdc.Change{After: opencdc.StructuredData{
				"null":   nil,
				"num":    -1.5,
				"big":    math.MaxFloat64,
				"inf":    math.Inf(1),
				"-inf":   math.Inf(-1),
				"nan":    math.NaN(),
				"str":    "text",
				"empty":  "",
				"true":   true,
				"false":  false,
				"nested": map[string]any{"a": map[string]any{"b": []any{1.0, "two", nil, true, map[string]any{}, []any{}}}},
				"list":   []any{},
			}},
		},
		{Position: opencdc.Position("p5"), Operation: opencdc.Operation(42)},
	}
}

// viaProto is what the protocol's own conversion makes of b.
func viaProto(t testing.TB, b []byte) []opencdc.Record {
	var req connectorv2.Destination_Run_Request
	if err := proto.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	r, err := fromproto.DestinationRunRequest(&req)
	if err != nil {
		t.Fatal(err)
	}
	return r.Records
}

func marshalRequest(t testing.TB, records []opencdc.Record) []byte {
	req := &connectorv2.Destination_Run_Request{}
	for _, r := range records {
		p := &opencdcv1.Record{}
		if err := r.ToProto(p); err != nil {
			t.Fatal(err)
		}
		req.Records = append(req.Records, p)
	}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Records covering every part of the format decode as the protocol's own
// conversion decodes them, also a second time with the same decoder.
func TestRecordDecoderMatchesProtocol(t *testing.T) {
	is := is.New(t)
	b := marshalRequest(t, wireRecords())
	var d RecordDecoder
	got, err := d.RunRequest(b, nil)
	is.NoErr(err)
	want := viaProto(t, b)
	is.Equal(len(got), len(want))
	for i := range want {
		is.Equal(got[i], want[i]) // record i
	}
	// A second request of the same shape decodes the same.
	again, err := d.RunRequest(b, nil)
	is.NoErr(err)
	is.Equal(again, got)
}

// Numbers decode to float64s of exactly their bits, those boxed once
// (small whole numbers) as the others, and each record's map is its own
// however many fields it has.
func TestRecordDecoderNumbersAndMaps(t *testing.T) {
	is := is.New(t)
	numbers := []float64{0, math.Copysign(0, -1), 1, 7, 1023, 1023.5, 1024, -1, 0.25, 1e300, math.SmallestNonzeroFloat64}
	after := opencdc.StructuredData{}
	list := make([]any, len(numbers))
	for i, n := range numbers {
		after[fmt.Sprint("n", i)] = n
		list[i] = n
	}
	after["list"] = list
	after["nested"] = map[string]any{"list": list, "n": 3.0}
	b := marshalRequest(t, []opencdc.Record{{Payload: opencdc.Change{After: after}}, {Payload: opencdc.Change{After: after}}})
	var d RecordDecoder
	got, err := d.RunRequest(b, nil)
	is.NoErr(err)
	is.Equal(len(got), 2)
	is.Equal(got, viaProto(t, b))
	bits := func(v any) uint64 {
		f, ok := v.(float64)
		is.True(ok) // a float64
		return math.Float64bits(f)
	}
	m := got[0].Payload.After.(opencdc.StructuredData)
	is.Equal(len(m), len(numbers)+2)
	for i, n := range numbers {
		is.Equal(bits(m[fmt.Sprint("n", i)]), math.Float64bits(n)) // the map's number, bit for bit
		is.Equal(bits(m["list"].([]any)[i]), math.Float64bits(n))  // the list's number, bit for bit
	}
	is.Equal(len(m["list"].([]any)), len(numbers))
	is.Equal(len(m["nested"].(map[string]any)), 2)

	// Changing one record's data leaves the other's alone.
	m["n0"], m["list"].([]any)[0] = "changed", "changed"
	other := got[1].Payload.After.(opencdc.StructuredData)
	is.Equal(other["n0"], 0.0)
	is.Equal(other["list"].([]any)[0], 0.0)
	// Nothing of the records stays reachable from the decoder.
	is.Equal(len(d.fields)+len(d.values), 0)
	for _, f := range d.fields[:cap(d.fields)] {
		is.True(f.key == "" && f.value == nil) // a field cleared
	}
	for _, v := range d.values[:cap(d.values)] {
		is.True(v == nil) // a list value cleared
	}
}

// Fields the format does not know, and known fields with another wire type,
// are skipped as the generated code skips them.
func TestRecordDecoderSkipsUnknownFields(t *testing.T) {
	is := is.New(t)
	rec := marshalRequest(t, []opencdc.Record{{Position: opencdc.Position("p"), Key: opencdc.StructuredData{"id": 1.0}}})
	_, _, n := protowire.ConsumeTag(rec)
	inner, _ := protowire.ConsumeBytes(rec[n:])
	var r []byte
	r = protowire.AppendTag(r, 99, protowire.BytesType)
	r = protowire.AppendBytes(r, []byte("unknown"))
	r = protowire.AppendTag(r, recordPosition, protowire.VarintType) // wrong type
	r = protowire.AppendVarint(r, 5)
	r = protowire.AppendTag(r, 98, protowire.Fixed32Type)
	r = protowire.AppendFixed32(r, 1)
	r = append(r, inner...)
	var b []byte
	b = protowire.AppendTag(b, 7, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	b = protowire.AppendTag(b, runRequestRecords, protowire.BytesType)
	b = protowire.AppendBytes(b, r)

	var d RecordDecoder
	got, err := d.RunRequest(b, nil)
	is.NoErr(err)
	is.Equal(got, viaProto(t, b))
}

// Input the generated code refuses, the decoder refuses too.
func TestRecordDecoderRejectsMalformedInput(t *testing.T) {
	valid := marshalRequest(t, wireRecords())
	badUTF8 := marshalRequest(t, []opencdc.Record{{Metadata: opencdc.Metadata{"k": "v"}}})
	badUTF8 = append([]byte{}, badUTF8...)
	badUTF8[len(badUTF8)-1] = 0xff
	for name, b := range map[string][]byte{
		"truncated":       valid[:len(valid)-3],
		"bad tag":         {0x00},
		"length too long": {0x0a, 0x7f, 0x01},
		"invalid UTF-8":   badUTF8,
	} {
		t.Run(name, func(t *testing.T) {
			var d RecordDecoder
			if _, err := d.RunRequest(b, nil); err == nil {
				t.Fatal("decoded malformed input without an error")
			}
			if err := proto.Unmarshal(b, &connectorv2.Destination_Run_Request{}); err == nil {
				t.Fatal("the generated code accepts this input: the test is wrong")
			}
		})
	}
}

// Any input the generated code accepts decodes to the same records; no input
// panics.
func FuzzRecordDecoder(f *testing.F) {
	f.Add(marshalRequest(f, wireRecords()))
	for _, r := range wireRecords() {
		f.Add(marshalRequest(f, []opencdc.Record{r}))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d RecordDecoder
		got, err := d.RunRequest(b, nil)
		var req connectorv2.Destination_Run_Request
		if proto.Unmarshal(b, &req) != nil || hasRepeatedMessageField(b) {
			return // generated code merges repeated message fields; Conduit never sends them
		}
		want, werr := fromproto.DestinationRunRequest(&req)
		if werr != nil {
			return
		}
		if err != nil {
			t.Fatalf("the generated code decodes this input, the decoder fails: %v", err)
		}
		if (len(got) > 0 || len(want.Records) > 0) && !reflect.DeepEqual(got, want.Records) {
			t.Fatalf("decoded\n%v\nthe generated code decodes\n%v", got, want.Records)
		}
	})
}

// hasRepeatedMessageField reports whether the request b sets a singular
// message field twice anywhere: the generated code merges the two, the
// decoder keeps the last. Repeated fields and map entries are fine.
func hasRepeatedMessageField(b []byte) bool {
	// singular lists, for each kind of message, its singular message
	// fields and the kind of each; repeated lists its repeated ones.
	type kind int
	const (
		request kind = iota
		record
		change
		data
		structure
		entry
		value
		list
	)
	singular := map[kind]map[protowire.Number]kind{
		record: {recordKey: data, recordPayload: change},
		change: {changeBefore: data, changeAfter: data},
		data:   {dataStructured: structure},
		entry:  {entryValue: value},
		value:  {valueStruct: structure, valueList: list},
	}
	repeated := map[kind]map[protowire.Number]kind{
		request:   {runRequestRecords: record},
		structure: {structFields: entry},
		list:      {listValues: value},
	}
	var walk func(b []byte, k kind) bool
	walk = func(b []byte, k kind) bool {
		seen := map[protowire.Number]bool{}
		found := false
		_ = Fields(b, func(f Field) error {
			if f.Type != protowire.BytesType {
				return nil
			}
			if inner, ok := singular[k][f.Num]; ok {
				found = found || seen[f.Num] || walk(f.Bytes, inner)
				seen[f.Num] = true
			} else if inner, ok := repeated[k][f.Num]; ok {
				found = found || walk(f.Bytes, inner)
			}
			return nil
		})
		return found
	}
	return walk(b, request)
}

// hasRepeatedMessageField finds a singular message field set twice, at
// any depth, and takes repeated fields for what they are.
func TestHasRepeatedMessageField(t *testing.T) {
	is := is.New(t)
	// Map entries, struct fields and list elements repeat by design.
	is.True(!hasRepeatedMessageField(marshalRequest(t, wireRecords())))
	field := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	structured := field(dataStructured, nil)
	twice := field(runRequestRecords, field(recordKey, append(structured, structured...)))
	is.True(hasRepeatedMessageField(twice))
	nested := field(runRequestRecords, field(recordPayload, field(changeAfter, field(dataStructured,
		field(structFields, append(field(entryValue, nil), field(entryValue, nil)...))))))
	is.True(hasRepeatedMessageField(nested))
}

// BenchmarkDecodeRunRequest measures decoding a message of 1000 records
// with the protocol's own conversion and with the decoder, per record.
func BenchmarkDecodeRunRequest(b *testing.B) {
	// Numbers are float64 after decoding: a google.protobuf.Value's.
	records := benchRecords(opencdc.OperationCreate, func(i int) any { return float64(i) }, func(i int) any { return float64(i % 1000) })
	msg := marshalRequest(b, records)
	b.Run("protocol", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			viaProto(b, msg)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(records)), "ns/record")
	})
	b.Run("decoder", func(b *testing.B) {
		b.ReportAllocs()
		var d RecordDecoder
		for b.Loop() {
			if _, err := d.RunRequest(msg, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(records)), "ns/record")
	})
}

// BenchmarkDecodeRows decodes messages of one record each, as Conduit's
// default engine sends them, of rows of growing width: a numeric key and
// a payload of text and number columns (and, in the last, a list).
func BenchmarkDecodeRows(b *testing.B) {
	row := func(i, width int) opencdc.Record {
		after := opencdc.StructuredData{}
		for c := range width {
			if c%2 == 0 {
				after[fmt.Sprint("text_", c)] = fmt.Sprint("value ", i, " of column ", c)
			} else {
				after[fmt.Sprint("number_", c)] = float64(i % 100)
			}
		}
		return opencdc.Record{
			Position:  opencdc.Position(fmt.Sprint(i)),
			Operation: opencdc.OperationCreate,
			Metadata:  opencdc.Metadata{"opencdc.collection": "bench", "opencdc.readAt": "1764064000000000000"},
			Key:       opencdc.StructuredData{"id": float64(i)},
			Payload:   opencdc.Change{After: after},
		}
	}
	for _, width := range []int{4, 16, 64} {
		b.Run(fmt.Sprint("columns=", width), func(b *testing.B) {
			msgs := make([][]byte, 100)
			for i := range msgs {
				msgs[i] = marshalRequest(b, []opencdc.Record{row(i, width)})
			}
			var d RecordDecoder
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := d.RunRequest(msgs[i%len(msgs)], nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("list", func(b *testing.B) {
		r := row(1, 4)
		r.Payload.After.(opencdc.StructuredData)["tags"] = []any{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", 1.0, 2.0}
		msg := marshalRequest(b, []opencdc.Record{r})
		var d RecordDecoder
		b.ReportAllocs()
		for b.Loop() {
			if _, err := d.RunRequest(msg, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
