package log

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/connkit/connkit/middleware/format"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// withLogger returns a context whose sdk.Logger writes to buf at level.
func withLogger(t *testing.T, buf *bytes.Buffer, level slog.Level) context.Context {
	t.Helper()
	l := slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level}))
	return sdk.ContextWithLogger(t.Context(), l)
}

func TestWriteLogsEveryRecordAtItsLevel(t *testing.T) {
	is := is.New(t)
	dst, err := Connector.Destination.New(map[string]string{"level": "warn"})
	is.NoErr(err)
	var buf bytes.Buffer
	ctx := withLogger(t, &buf, slog.LevelInfo)
	recs := []sdk.Record{
		{Position: sdk.Position("1"), Operation: sdk.OperationCreate, Payload: sdk.Change{After: sdk.RawData("hello")}},
		{Position: sdk.Position("2"), Operation: sdk.OperationDelete, Key: sdk.StructuredData{"id": 2}},
	}
	n, err := dst.Write(ctx, recs)
	is.NoErr(err)
	is.Equal(n, 2)
	out := buf.String()
	is.Equal(strings.Count(out, "level=WARN msg=record"), 2)
	// Each record is logged as Record.Bytes gives it: OpenCDC JSON here.
	is.True(strings.Contains(out, `"operation\":\"create\"`))
	is.True(strings.Contains(out, `\"after\":\"aGVsbG8=\"`)) // hello
	is.True(strings.Contains(out, `\"key\":{\"id\":2}`))
}

// A record format set on a record decides what is logged.
func TestWriteLogsTheRecordFormat(t *testing.T) {
	is := is.New(t)
	dst, err := Connector.Destination.New(map[string]string{"level": "info"})
	is.NoErr(err)
	s, err := format.New(format.Template, `{{ printf "%s" .Payload.After }}`)
	is.NoErr(err)
	rec := sdk.Record{Position: sdk.Position("1"), Operation: sdk.OperationCreate, Payload: sdk.Change{After: sdk.RawData("hello")}}
	rec.SetSerializer(s)
	var buf bytes.Buffer
	_, err = dst.Write(withLogger(t, &buf, slog.LevelInfo), []sdk.Record{rec})
	is.NoErr(err)
	is.True(strings.Contains(buf.String(), "msg=record record=hello"))
}

func TestTraceIsANoOpAtInfo(t *testing.T) {
	is := is.New(t)
	dst, err := Connector.Destination.New(map[string]string{"level": "trace"})
	is.NoErr(err)
	var buf bytes.Buffer
	n, err := dst.Write(withLogger(t, &buf, slog.LevelInfo), []sdk.Record{{Position: sdk.Position("1")}})
	is.NoErr(err)
	is.Equal(n, 1)
	is.Equal(buf.Len(), 0)
}

func TestLevelIsValidated(t *testing.T) {
	_, err := Connector.Destination.New(map[string]string{"level": "verbose"})
	if err == nil || !strings.Contains(err.Error(), `parameter "level": got "verbose", expected one of trace, debug, info, warn, error`) {
		t.Fatalf("got %v", err)
	}
}
