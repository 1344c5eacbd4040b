package connector

import (
	"context"
	"log/slog"

	"github.com/connkit/connkit/internal/callctx"
)

// Logger returns the logger for connector code running under ctx. Its
// output reaches Conduit's log at the record's level, filtered by the level
// Conduit set for the plugin; Conduit's trace is slog.LevelDebug-4. Outside
// a plugin it logs to stderr.
func Logger(ctx context.Context) *slog.Logger { return callctx.Logger(ctx) }

// ContextWithLogger returns ctx carrying l, for tests that call connector
// code directly and want to see what it logs.
func ContextWithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return callctx.WithLogger(ctx, l)
}
