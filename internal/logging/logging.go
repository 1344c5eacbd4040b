// Package logging writes plugin logs in the form Conduit re-logs: one JSON
// object per line on stderr with @timestamp, @level and @message keys, which
// go-plugin reads on Conduit's side and logs at the line's level.
package logging

import (
	"io"
	"log/slog"
	"strings"
)

// LevelTrace is below slog.LevelDebug; Conduit knows it as "trace".
const LevelTrace = slog.Level(-8)

// timestampLayout is the only layout go-plugin accepts for @timestamp; a line
// with any other layout is logged by Conduit at debug level as plain text.
const timestampLayout = "2006-01-02T15:04:05.000000Z07:00"

// ParseLevel maps a Conduit log level name (trace, debug, info, warn, error)
// to a slog level. Unknown or empty names mean info.
func ParseLevel(name string) slog.Level {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "trace":
		return LevelTrace
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error", "fatal", "panic":
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

// LevelName is the inverse of ParseLevel.
func LevelName(l slog.Level) string {
	switch {
	case l < slog.LevelDebug:
		return "trace"
	case l < slog.LevelInfo:
		return "debug"
	case l < slog.LevelWarn:
		return "info"
	case l < slog.LevelError:
		return "warn"
	default:
		return "error"
	}
}

// NewHandler returns a slog handler that writes Conduit's JSON lines to w.
func NewHandler(w io.Writer, level slog.Leveler) slog.Handler {
	return slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.TimeKey:
				return slog.String("@timestamp", a.Value.Time().Format(timestampLayout))
			case slog.LevelKey:
				return slog.String("@level", LevelName(a.Value.Any().(slog.Level)))
			case slog.MessageKey:
				return slog.Attr{Key: "@message", Value: a.Value}
			}
			return a
		},
	})
}
