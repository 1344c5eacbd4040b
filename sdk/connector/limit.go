package connector

import (
	"context"

	"github.com/connkit/connkit/internal/callctx"
)

// DefaultMaxRecordSize is Conduit's default limit on the size of a record
// a plugin receives, 4 MiB.
const DefaultMaxRecordSize = callctx.DefaultMaxRecordSize

// MaxRecordSize returns the largest record, in bytes, Conduit lets the
// plugin running connector code under ctx receive: what Conduit sets in
// CONDUIT_CONNECTOR_MAX_RECEIVE_RECORD_SIZE, [DefaultMaxRecordSize] unless
// it says otherwise. Conduit gives every plugin of a pipeline the same
// limit, so a source can use it to refuse what the destination would not
// take, and to bound what it reads. Outside a plugin it is the default.
func MaxRecordSize(ctx context.Context) int { return callctx.MaxRecordSize(ctx) }

// ContextWithMaxRecordSize returns ctx carrying n as the limit
// [MaxRecordSize] returns: the plugin server sets it, and a test of
// connector code may too.
func ContextWithMaxRecordSize(ctx context.Context, n int) context.Context {
	return callctx.WithMaxRecordSize(ctx, n)
}
