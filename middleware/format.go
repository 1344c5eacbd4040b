package middleware

import (
	"context"
	"slices"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/middleware/format"
)

// RecordFormat is the record format settings for destinations, with the
// incumbent Conduit SDK's parameters: connector code that writes bytes gets
// each record's bytes in this format from the record's Bytes method.
type RecordFormat struct {
	Format  string `param:"sdk.record.format" validate:"inclusion=opencdc/json|debezium/json|template" desc:"The format of the bytes a destination writes for a record: opencdc/json, debezium/json or template (a Go text/template in sdk.record.format.options)."`
	Options string `param:"sdk.record.format.options" desc:"Options of the record format: for debezium/json, debezium.schema.name and debezium.rawData.key as key=value pairs separated by commas; for template, the template."`
}

// ForDestination returns [FormatRecords] with the serializer these settings
// name, or nil for opencdc/json without options, which is what a record's
// Bytes method returns anyway. Options that do not fit the format are an
// error.
func (r RecordFormat) ForDestination(Env) (Middleware[Destination], error) {
	if r.Format == format.OpenCDCJSON && r.Options == "" {
		return nil, nil
	}
	s, err := format.New(r.Format, r.Options)
	if err != nil {
		return nil, err
	}
	return FormatRecords(s), nil
}

// FormatRecords returns middleware that sets s as the serializer of every
// record written, so that the record's Bytes method returns it in s's
// format. The input slice is not modified: Write gets a copy.
func FormatRecords(s opencdc.RecordSerializer) Middleware[Destination] {
	return func(d Destination) Destination {
		return &formatting{Destination: d, serializer: s}
	}
}

type formatting struct {
	Destination
	serializer opencdc.RecordSerializer
}

func (f *formatting) Unwrap() Destination { return f.Destination }

func (f *formatting) Write(ctx context.Context, records []opencdc.Record) (int, error) {
	formatted := slices.Clone(records)
	for i := range formatted {
		formatted[i].SetSerializer(f.serializer)
	}
	return f.Destination.Write(ctx, formatted)
}
