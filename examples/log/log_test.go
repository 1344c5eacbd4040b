package log

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

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
	is.True(strings.Contains(out, "after=hello"))
	is.True(strings.Contains(out, "operation=delete"))
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
