package middleware_test

import (
	"context"
	"fmt"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/middleware"
	"github.com/connkit/connkit/internal/schema"
)

// write prints how many records each Write gets.
func write(_ context.Context, r []opencdc.Record) (int, error) {
	fmt.Println("writing", len(r), "records")
	return len(r), nil
}

func ExampleRateLimit_Wrap() {
	wrap, _ := middleware.RateLimit{PerSecond: 1000, Burst: 2}.Wrap(middleware.Env{})
	n, err := wrap(write)(context.Background(), make([]opencdc.Record, 3))
	fmt.Println(n, "written", err)

	none, _ := middleware.RateLimit{}.Wrap(middleware.Env{})
	fmt.Println(none == nil) // no limit: nothing to wrap
	// Output:
	// writing 2 records
	// writing 1 records
	// 3 written <nil>
	// true
}

func ExampleRecordFormat_Wrap() {
	wrap, _ := middleware.RecordFormat{Format: "template", Options: "at {{ printf \"%s\" .Position }}"}.Wrap(middleware.Env{})
	show := func(_ context.Context, r []opencdc.Record) (int, error) {
		fmt.Println(string(r[0].Bytes()))
		return len(r), nil
	}
	_, _ = wrap(show)(context.Background(), []opencdc.Record{{Position: opencdc.Position("p1")}})

	_, err := middleware.RecordFormat{Format: "debezium/json", Options: "debezium.nope=1"}.Wrap(middleware.Env{})
	fmt.Println(err != nil)
	// Output:
	// at p1
	// true
}

// A source's structured payloads leave it as Avro, and a destination's
// decoding turns them back into structured data before Write.
func ExampleSchemaEncoding_Wrap() {
	env := middleware.Env{Schemas: schema.NewInMemory(), ConnectorID: "pg-1"}
	encode, _ := middleware.SchemaEncoding{Type: "avro", Payload: true, PayloadSubject: "payload", Context: true}.Wrap(env)
	read := func(context.Context, int) ([]opencdc.Record, error) {
		return []opencdc.Record{{Position: opencdc.Position("1"), Payload: opencdc.Change{After: opencdc.StructuredData{"id": int64(7)}}}}, nil
	}
	recs, _ := encode(read)(context.Background(), 1)
	fmt.Println(recs[0].Metadata[opencdc.MetadataPayloadSchemaSubject])
	_, isRaw := recs[0].Payload.After.(opencdc.RawData)
	fmt.Println("raw:", isRaw)

	decode, _ := middleware.SchemaDecoding{Payload: true}.Wrap(env)
	show := func(_ context.Context, r []opencdc.Record) (int, error) {
		fmt.Println(r[0].Payload.After)
		return len(r), nil
	}
	_, _ = decode(show)(context.Background(), recs)
	// Output:
	// pg-1:payload
	// raw: true
	// map[id:7]
}

func ExampleDefaultSchemaEncoding() {
	fmt.Printf("%+v\n", middleware.DefaultSchemaEncoding())
	// Output: {Type:avro Payload:true PayloadSubject:payload Key:true KeySubject:key Context:true ContextName:}
}

func ExampleDefaultSchemaDecoding() {
	fmt.Printf("%+v\n", middleware.DefaultSchemaDecoding())
	// Output: {Payload:true Key:true}
}

func ExampleDefaultRecordFormat() {
	fmt.Printf("%+v\n", middleware.DefaultRecordFormat())
	// Output: {Format:opencdc/json Options:}
}
