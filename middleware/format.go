package middleware

import (
	"context"
	"slices"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/middleware/format"
)

// FormatRecords sets the serializer of the record format name, configured
// with options, on every record written, so that its Bytes method returns
// the record in that format: the sdk.record.format and
// sdk.record.format.options parameters of a destination (package
// middleware/format has the formats). The input slice is not modified:
// Write gets a copy. For opencdc/json, what Bytes returns anyway, it
// returns Write unchanged. Options that do not fit the format are an
// error that names the parameter.
func FormatRecords(name, options string) (func(Write) Write, error) {
	s, err := format.New(name, options)
	if err != nil {
		return nil, err
	}
	return func(write Write) Write {
		if name == format.OpenCDCJSON {
			return write
		}
		return func(ctx context.Context, records []opencdc.Record) (int, error) {
			formatted := slices.Clone(records)
			for i := range formatted {
				formatted[i].SetSerializer(s)
			}
			return write(ctx, formatted)
		}
	}, nil
}
