package jsonl_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/connkit/connkit/examples/jsonl"
	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/sdktest"
)

// This is all it takes to run the conformance suite on a destination:
// a working configuration, and, for the round trip, a way to read back
// what was written.
func TestDestination(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	sdktest.Destination(t, sdktest.DestinationSuite{
		Connector: jsonl.Connector,
		Config:    map[string]string{"path": path},
		ReadBack:  func(context.Context) ([]sdk.Record, error) { return jsonl.ReadFile(path) },
		// Appended lines: a record sent again after a crash, if it was
		// written before, is there twice. The crash check reports it.
		Delivery: sdktest.AtLeastOnce,
		Plugin:   sdktest.Plugin("connkit-jsonl", "./cmd/connkit-jsonl"),
	})
}

// The source reads a file the destination wrote: more lines than the
// crash check's run of 300 records.
func TestSource(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.jsonl")
	writeFile(t, path, 400)
	sdktest.Source(t, sdktest.SourceSuite{
		Connector: jsonl.Connector,
		Config:    map[string]string{"path": path, "poll": "10ms"},
		Plugin:    sdktest.Plugin("connkit-jsonl", "./cmd/connkit-jsonl"),
	})
}

// writeFile writes n records of every operation, raw and structured, with
// the destination.
func writeFile(t *testing.T, path string, n int) []sdk.Record {
	t.Helper()
	ops := []sdk.Operation{sdk.OperationCreate, sdk.OperationUpdate, sdk.OperationDelete, sdk.OperationSnapshot}
	records := make([]sdk.Record, n)
	for i := range records {
		records[i] = sdktest.TestRecord(i+1, ops[i%len(ops)], i%3 == 0)
	}
	d, err := jsonl.Connector.Destination.New(map[string]string{"path": path})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer d.Teardown(context.Background())
	if n, err := d.Write(t.Context(), records); err != nil || n != len(records) {
		t.Fatalf("wrote %d of %d records: %v", n, len(records), err)
	}
	return records
}

// A line torn by a crash was never acknowledged: the destination cuts it
// off when it opens the file again, and the source waits for a line to be
// complete before it reads it.
func TestTornLine(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "torn.jsonl")
	written := writeFile(t, path, 2)

	src, err := jsonl.Connector.Source.New(map[string]string{"path": path, "poll": "1ms"})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Open(ctx, nil); err != nil {
		t.Fatal(err)
	}
	defer src.Teardown(context.Background())
	for i := range written {
		r, err := src.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Metadata["jsonl.position"]; got != string(written[i].Position) {
			t.Fatalf("record %d was written at %q, read as %q", i, written[i].Position, got)
		}
	}

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"operation":"cre`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if r, err := src.Read(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("read %v, %v from a torn line; want to wait for the rest", r, err)
	}

	writeFile(t, path, 1) // opens the file again: cuts the torn line
	records, err := jsonl.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 3 {
		t.Fatalf("%d records in the file, want 3", len(records))
	}
	if r, err := src.Read(ctx); err != nil || r.Metadata["jsonl.position"] != "sdktest-1" {
		t.Fatalf("read %v, %v after the torn line was replaced", r, err)
	}
}

// A file that does not exist yet is waited for, as the poll parameter
// says, but not silently: Open warns once, and Read says when it appears.
func TestSourceWaitsForAMissingFileAndSaysSo(t *testing.T) {
	var log bytes.Buffer
	ctx := sdk.ContextWithLogger(t.Context(), slog.New(slog.NewTextHandler(&log, nil)))
	path := filepath.Join(t.TempDir(), "later.jsonl")
	src, err := jsonl.Connector.Source.New(map[string]string{"path": path, "poll": "1ms"})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Open(ctx, nil); err != nil {
		t.Fatalf("Open fails on a file that may appear later: %v", err)
	}
	defer src.Teardown(context.Background())
	for range 3 {
		short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
		if r, err := src.Read(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("read %v, %v from a missing file; want to wait for it", r, err)
		}
		cancel()
	}
	if n := strings.Count(log.String(), "level=WARN"); n != 1 || !strings.Contains(log.String(), path+" does not exist yet") {
		t.Fatalf("want one warning naming %s, got %d:\n%s", path, n, log.String())
	}
	written := writeFile(t, path, 1)
	r, err := src.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Metadata["jsonl.position"]; got != string(written[0].Position) {
		t.Fatalf("read the record written at %q as %q", written[0].Position, got)
	}
	if !strings.Contains(log.String(), path+" exists now") {
		t.Errorf("the file's appearance is not logged:\n%s", log.String())
	}
}

// What can never be read fails at Open, naming the parameter.
func TestSourceOpenRefusesWhatCannotBeRead(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, path string
		from       sdk.Position
		want       string
	}{
		{"a directory", dir, nil, "is a directory"},
		{"a file gone while it was read", filepath.Join(dir, "gone.jsonl"), sdk.Position("120"), "was it moved or deleted?"},
	} {
		src, err := jsonl.Connector.Source.New(map[string]string{"path": tt.path})
		if err != nil {
			t.Fatal(err)
		}
		err = src.Open(t.Context(), tt.from)
		if err == nil || !strings.Contains(err.Error(), `parameter "path"`) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Open returned %v, want an error naming path and saying %q", tt.name, err, tt.want)
		}
	}
}
