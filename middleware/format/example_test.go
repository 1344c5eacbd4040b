package format_test

import (
	"fmt"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/middleware/format"
)

func ExampleNew() {
	rec := opencdc.Record{
		Position:  opencdc.Position("1"),
		Operation: opencdc.OperationCreate,
		Key:       opencdc.RawData("id-1"),
		Payload:   opencdc.Change{After: opencdc.StructuredData{"name": "ann"}},
	}
	for _, f := range []struct{ name, options string }{
		{format.OpenCDCJSON, ""},
		{format.Template, `{{ printf "%s" .Key }}: {{ .Payload.After.name }}`},
	} {
		s, err := format.New(f.name, f.options)
		if err != nil {
			fmt.Println(err)
			return
		}
		rec.SetSerializer(s)
		fmt.Println(string(rec.Bytes()))
	}
	_, err := format.New("avro/json", "")
	fmt.Println(err)
	// Output:
	// {"position":"MQ==","operation":"create","metadata":null,"key":"aWQtMQ==","payload":{"before":null,"after":{"name":"ann"}}}
	// id-1: ann
	// sdk.record.format: "avro/json" is not a record format; expected one of debezium/json, opencdc/json, template
}

func ExampleNew_debezium() {
	s, err := format.New(format.DebeziumJSON, "debezium.schema.name=users.Envelope")
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := s.Serialize(opencdc.Record{
		Operation: opencdc.OperationDelete,
		Metadata:  opencdc.Metadata{opencdc.MetadataReadAt: "1714979289123456789"},
		Payload:   opencdc.Change{Before: opencdc.StructuredData{"id": 1}},
	})
	fmt.Println(string(b), err)
	// Output:
	// {"schema":{"type":"struct","name":"users.Envelope","fields":[{"type":"struct","optional":true,"fields":[{"type":"int64","field":"id"}],"field":"before"},{"type":"struct","optional":true,"fields":[{"type":"int64","field":"id"}],"field":"after"},{"type":"struct","optional":true,"fields":[{"type":"string","field":"opencdc.readAt"}],"field":"source"},{"type":"string","field":"op"},{"type":"int64","optional":true,"field":"ts_ms"},{"type":"struct","optional":true,"fields":[{"type":"string","field":"id"},{"type":"int64","field":"total_order"},{"type":"int64","field":"data_collection_order"}],"field":"transaction"}]},"payload":{"before":{"id":1},"after":null,"source":{"opencdc.readAt":"1714979289123456789"},"op":"d","ts_ms":1714979289123,"transaction":null}} <nil>
}

func ExampleNames() {
	fmt.Println(format.Names())
	// Output: [debezium/json opencdc/json template]
}
