package middleware

import (
	"context"
	"slices"

	"github.com/conduitio/conduit-commons/opencdc"
)

// FormatRecords sets s as the serializer of every record written, so that
// its Bytes method returns it in that format (package middleware/format
// makes them). The input slice is not modified: Write gets a copy. With a
// nil s it returns Write unchanged.
func FormatRecords(s opencdc.RecordSerializer) func(Write) Write {
	return func(write Write) Write {
		if s == nil {
			return write
		}
		return func(ctx context.Context, records []opencdc.Record) (int, error) {
			formatted := slices.Clone(records)
			for i := range formatted {
				formatted[i].SetSerializer(s)
			}
			return write(ctx, formatted)
		}
	}
}
