package sdk

import (
	"context"

	"github.com/connkit/connkit/internal/plugin"
)

// MaxRecordSize returns the largest record, in bytes, Conduit lets the
// plugin running connector code under ctx receive: what Conduit sets in
// CONDUIT_CONNECTOR_MAX_RECEIVE_RECORD_SIZE, 4 MiB by default. Conduit
// gives every plugin of a pipeline the same limit, so a source can use it
// to refuse what the destination would not take, and to bound what it
// reads. Outside a plugin it is the default.
func MaxRecordSize(ctx context.Context) int { return plugin.MaxRecordSize(ctx) }
