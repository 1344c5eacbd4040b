package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestHandlerWritesWhatConduitParses(t *testing.T) {
	is := is.New(t)
	var buf bytes.Buffer
	log := slog.New(NewHandler(&buf, LevelTrace))
	log.Log(t.Context(), LevelTrace, "tracing", "n", 1)
	log.Warn("careful", slog.Group("g", "k", "v"))

	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	is.Equal(len(lines), 2)
	for i, want := range []struct{ level, msg string }{{"trace", "tracing"}, {"warn", "careful"}} {
		var entry map[string]any
		is.NoErr(json.Unmarshal(lines[i], &entry))
		is.Equal(entry["@level"], want.level)
		is.Equal(entry["@message"], want.msg)
		// go-plugin drops to plain text any line whose timestamp has another layout.
		_, err := time.Parse("2006-01-02T15:04:05.000000Z07:00", entry["@timestamp"].(string))
		is.NoErr(err)
	}
}

func TestLevels(t *testing.T) {
	is := is.New(t)
	for _, name := range []string{"trace", "debug", "info", "warn", "error"} {
		is.Equal(LevelName(ParseLevel(name)), name)
	}
	is.Equal(ParseLevel(""), slog.LevelInfo)       // Conduit sets none when loading specs
	is.Equal(ParseLevel("chatty"), slog.LevelInfo) // unknown names are not fatal
	is.Equal(ParseLevel(" DEBUG "), slog.LevelDebug)
}
