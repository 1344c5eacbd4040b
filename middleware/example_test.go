package middleware_test

import (
	"context"
	"fmt"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/middleware"
)

// write prints how many records each Write gets.
func write(_ context.Context, r []opencdc.Record) (int, error) {
	fmt.Println("writing", len(r), "records")
	return len(r), nil
}

func ExampleLimitRate() {
	limited := middleware.LimitRate(1000, 2)(write)
	n, err := limited(context.Background(), make([]opencdc.Record, 3))
	fmt.Println(n, "written", err)
	// Output:
	// writing 2 records
	// writing 1 records
	// 3 written <nil>
}

func ExampleFormatRecords() {
	wrap, err := middleware.FormatRecords("template", `at {{ printf "%s" .Position }}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	show := func(_ context.Context, r []opencdc.Record) (int, error) {
		fmt.Println(string(r[0].Bytes()))
		return len(r), nil
	}
	_, _ = wrap(show)(context.Background(), []opencdc.Record{{Position: opencdc.Position("p1")}})

	_, err = middleware.FormatRecords("debezium/json", "debezium.nope=1")
	fmt.Println(err)
	// Output:
	// at p1
	// sdk.record.format.options: "debezium.nope" is not an option of debezium/json; expected debezium.rawData.key, debezium.schema.name
}

// A source's structured payloads leave it as Avro, and a destination's
// decoding turns them back into structured data before Write. Outside a
// plugin, both use an in-memory schema registry the process shares.
func ExampleEncodeSchemas() {
	read := func(context.Context, int) ([]opencdc.Record, error) {
		return []opencdc.Record{{Position: opencdc.Position("1"), Payload: opencdc.Change{After: opencdc.StructuredData{"id": int64(7)}}}}, nil
	}
	encode := middleware.EncodeSchemas(middleware.Subjects{Payload: "payload", Context: "pg-1"})(read)
	recs, _ := encode(context.Background(), 1)
	fmt.Println(recs[0].Metadata[opencdc.MetadataPayloadSchemaSubject])
	_, isRaw := recs[0].Payload.After.(opencdc.RawData)
	fmt.Println("raw:", isRaw)

	show := func(_ context.Context, r []opencdc.Record) (int, error) {
		fmt.Println(r[0].Payload.After)
		return len(r), nil
	}
	decode := middleware.DecodeSchemas(false, true)(show)
	_, _ = decode(context.Background(), recs)
	// Output:
	// pg-1:payload
	// raw: true
	// map[id:7]
}

// A wrapper whose settings leave it nothing to do returns what it wraps.
func ExampleDecodeSchemas() {
	decode := middleware.DecodeSchemas(false, false)(write)
	_, _ = decode(context.Background(), make([]opencdc.Record, 2))
	// Output: writing 2 records
}
