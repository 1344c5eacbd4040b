// Package log is a destination that logs every record it receives. At level
// trace, with the plugin logging at info, it discards records at almost no
// cost, which makes it the no-op destination of benchmarks.
package log

import (
	"context"
	"log/slog"

	"github.com/connkit/connkit/sdk"
)

// Connector is the log plugin.
var Connector = sdk.Connector{
	Name:        "log",
	Version:     "v0.1.0",
	Summary:     "Logs every record it receives.",
	Description: "Writes each record, as Record.Bytes gives it (OpenCDC JSON unless a record format is set), to the plugin's log at the configured level. Conduit shows it when its own log level lets that level through.",
	Author:      "connkit",
	Destination: sdk.NewDestination(New),
}

// Config is the log destination's configuration.
type Config struct {
	Level string `param:"level" default:"info" validate:"inclusion=trace|debug|info|warn|error" desc:"The level records are logged at."`
}

var levels = map[string]slog.Level{
	"trace": slog.LevelDebug - 4, // Conduit's trace
	"debug": slog.LevelDebug,
	"info":  slog.LevelInfo,
	"warn":  slog.LevelWarn,
	"error": slog.LevelError,
}

// Destination logs records.
type Destination struct {
	level slog.Level
}

// New returns a log destination.
func New(cfg Config) (*Destination, error) {
	return &Destination{level: levels[cfg.Level]}, nil
}

// Open has nothing to open.
func (d *Destination) Open(context.Context) error { return nil }

// Write logs each record; it never fails.
func (d *Destination) Write(ctx context.Context, records []sdk.Record) (int, error) {
	logger := sdk.Logger(ctx)
	if !logger.Enabled(ctx, d.level) {
		return len(records), nil
	}
	for _, r := range records {
		// Bytes honours the record format set on the record (the SDK's
		// sdk.record.format); without one it is OpenCDC JSON.
		logger.Log(ctx, d.level, "record", "record", string(r.Bytes()))
	}
	return len(records), nil
}

// Teardown has nothing to release.
func (d *Destination) Teardown(context.Context) error { return nil }
