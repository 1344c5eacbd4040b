package plugin

import (
	"context"
	"log/slog"
	"testing"

	"github.com/connkit/connkit/sdk/connector"
	"github.com/matryer/is"
)

// TestSettingsFromEnv: the settings come from the variables Conduit sets,
// with defaults for what is not set and a warning for a value ignored;
// with GOGC set, the plugin sets no garbage collector target.
func TestSettingsFromEnv(t *testing.T) {
	tests := []struct {
		env      map[string]string
		want     Settings
		warnings int
	}{
		{map[string]string{}, Settings{LogLevel: slog.LevelInfo, MaxReceiveSize: 4 << 20, GCPercent: 200}, 0},
		{map[string]string{
			"CONDUIT_CONNECTOR_LOG_LEVEL":               "trace",
			"CONDUIT_CONNECTOR_MAX_RECEIVE_RECORD_SIZE": "1024",
		}, Settings{LogLevel: -8, MaxReceiveSize: 1024, GCPercent: 200}, 0},
		{map[string]string{"CONDUIT_CONNECTOR_MAX_RECEIVE_RECORD_SIZE": "lots"}, Settings{LogLevel: slog.LevelInfo, MaxReceiveSize: 4 << 20, GCPercent: 200}, 1},
		{map[string]string{"CONDUIT_CONNECTOR_MAX_RECEIVE_RECORD_SIZE": "-5"}, Settings{LogLevel: slog.LevelInfo, MaxReceiveSize: 4 << 20, GCPercent: 200}, 1},
		// GOGC, when set, is the runtime's to apply.
		{map[string]string{"GOGC": "50"}, Settings{LogLevel: slog.LevelInfo, MaxReceiveSize: 4 << 20}, 0},
		{map[string]string{"GOGC": "off"}, Settings{LogLevel: slog.LevelInfo, MaxReceiveSize: 4 << 20}, 0},
		// go-plugin's host puts its certificate there when it asks for mutual TLS.
		{map[string]string{"PLUGIN_CLIENT_CERT": "-----BEGIN CERTIFICATE-----"}, Settings{LogLevel: slog.LevelInfo, MaxReceiveSize: 4 << 20, GCPercent: 200, HostTLS: true}, 0},
	}
	for _, tt := range tests {
		is := is.New(t)
		got, warnings := settingsFromEnv(func(k string) string { return tt.env[k] })
		is.Equal(got, tt.want)
		is.Equal(len(warnings), tt.warnings)
	}
}

// Connector code finds the plugin's record size limit in the context of
// every call, and Conduit's default outside one.
func TestMaxRecordSizeInContext(t *testing.T) {
	is := is.New(t)
	is.Equal(connector.MaxRecordSize(context.Background()), 4<<20)
	is.Equal(DefaultMaxReceiveSize, connector.DefaultMaxRecordSize) // what Conduit sends by default
	ctx := Settings{MaxReceiveSize: 1234}.context(context.Background(), discard)
	is.Equal(connector.MaxRecordSize(ctx), 1234)
}
