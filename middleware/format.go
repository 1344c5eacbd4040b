package middleware

import (
	"context"
	"slices"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/middleware/format"
)

// RecordFormat is the record format settings for destinations, with the
// incumbent Conduit SDK's parameters: connector code that writes bytes gets
// each record's bytes in this format from the record's Bytes method. The
// defaults are [DefaultRecordFormat]'s.
type RecordFormat struct {
	Format  string `param:"sdk.record.format" validate:"inclusion=opencdc/json|debezium/json|template" desc:"The format of the bytes a destination writes for a record: opencdc/json, debezium/json or template (a Go text/template in sdk.record.format.options)."`
	Options string `param:"sdk.record.format.options" desc:"Options of the record format: for debezium/json, debezium.schema.name and debezium.rawData.key as key=value pairs separated by commas; for template, the template."`
}

// DefaultRecordFormat returns the incumbent Conduit SDK's default, which a
// destination has unless its connector gives another: opencdc/json, no
// options.
func DefaultRecordFormat() RecordFormat { return RecordFormat{Format: format.OpenCDCJSON} }

// Wrap returns the wrapper these settings describe: every record written
// gets the serializer the format names, so that its Bytes method returns
// it in that format. It returns nil for opencdc/json without options,
// which is what a record's Bytes method returns anyway, and an error when
// the options do not fit the format.
func (r RecordFormat) Wrap(Env) (func(Write) Write, error) {
	if r.Format == format.OpenCDCJSON && r.Options == "" {
		return nil, nil
	}
	s, err := format.New(r.Format, r.Options)
	if err != nil {
		return nil, err
	}
	return formatRecords(s), nil
}

// formatRecords sets s as the serializer of every record written. The
// input slice is not modified: Write gets a copy.
func formatRecords(s opencdc.RecordSerializer) func(Write) Write {
	return func(write Write) Write {
		return func(ctx context.Context, records []opencdc.Record) (int, error) {
			formatted := slices.Clone(records)
			for i := range formatted {
				formatted[i].SetSerializer(s)
			}
			return write(ctx, formatted)
		}
	}
}
