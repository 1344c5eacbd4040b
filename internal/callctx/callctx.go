// Package callctx is what the plugin server puts in the context of every
// call of connector code, and what connector code reads from it: the
// plugin's logger and Conduit's limit on a record's size. It sits below
// both the plugin server (internal/plugin), which sets them, and the
// connector's contract (sdk/connector), which reads them, so that neither
// imports the other.
package callctx

import (
	"context"
	"log/slog"
	"os"

	"github.com/connkit/connkit/internal/logging"
)

type loggerKey struct{}

// WithLogger returns ctx carrying l.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// fallback logs to stderr at info, for code running outside a plugin server.
var fallback = slog.New(logging.NewHandler(os.Stderr, slog.LevelInfo))

// Logger returns the logger ctx carries, or one that writes to stderr.
func Logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return fallback
}

// DefaultMaxRecordSize is Conduit's default limit on the size of a record
// a plugin receives, 4 MiB.
const DefaultMaxRecordSize = 4 << 20

type maxRecordSizeKey struct{}

// WithMaxRecordSize returns ctx carrying n as the limit MaxRecordSize
// returns.
func WithMaxRecordSize(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, maxRecordSizeKey{}, n)
}

// MaxRecordSize returns the limit ctx carries, DefaultMaxRecordSize
// without one.
func MaxRecordSize(ctx context.Context) int {
	if n, ok := ctx.Value(maxRecordSizeKey{}).(int); ok && n > 0 {
		return n
	}
	return DefaultMaxRecordSize
}
