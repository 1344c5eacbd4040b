package sdk

import (
	"context"

	"github.com/connkit/connkit/internal/plugin"
)

// DefaultMaxRecordSize is Conduit's default record size limit, 4 MiB.
const DefaultMaxRecordSize = plugin.DefaultMaxReceiveSize

// MaxRecordSize returns the largest record, in bytes, Conduit lets the
// plugin running connector code under ctx receive: what Conduit sets in
// CONDUIT_CONNECTOR_MAX_RECEIVE_RECORD_SIZE, or [DefaultMaxRecordSize].
// Conduit gives every plugin of a pipeline the same limit, so a source can
// use it to refuse what the destination would not take, and to bound what
// it reads. Outside a plugin it is DefaultMaxRecordSize.
func MaxRecordSize(ctx context.Context) int { return plugin.MaxRecordSize(ctx) }

// ContextWithMaxRecordSize returns ctx carrying n as the record size
// limit, for tests that call connector code directly.
func ContextWithMaxRecordSize(ctx context.Context, n int) context.Context {
	return plugin.NewMaxRecordSizeContext(ctx, n)
}
