package file_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/connkit/connkit/examples/file"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// openSource opens a source on path from position from, torn down with
// the test.
func openSource(t *testing.T, ctx context.Context, path string, from sdk.Position) *file.Source {
	t.Helper()
	s, err := file.NewSource(file.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(ctx, from); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Teardown(context.Background()) })
	return s
}

// Each line is a create record: the position is the offset after it, the
// key its number since the source started, the payload the line without
// its newline (a carriage return stays), and the metadata the path and
// the time it was read.
func TestSourceRecords(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "first\nsecond\r\n\nfourth\n")
	before := time.Now()
	s := openSource(t, t.Context(), path, nil)
	want := []struct{ pos, key, payload string }{
		{"6", "1", "first"}, {"14", "2", "second\r"}, {"15", "3", ""}, {"22", "4", "fourth"},
	}
	for _, w := range want {
		r, err := s.Read(t.Context())
		is.NoErr(err)
		is.Equal(string(r.Position), w.pos)
		is.Equal(r.Operation, sdk.OperationCreate)
		is.Equal(r.Key, sdk.RawData(w.key))
		is.Equal(r.Payload, sdk.Change{After: sdk.RawData(w.payload)})
		is.Equal(r.Metadata[file.MetadataPath], path)
		readAt, err := r.Metadata.GetReadAt()
		is.NoErr(err)
		is.True(!readAt.Before(before) && !readAt.After(time.Now()))
		is.Equal(len(r.Metadata), 2)
	}
}

// A restart resumes after the line at the position, and counts lines from
// 1 again there, as the incumbent does.
func TestSourceResumeCountsLinesAgain(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "in.txt")
	writeLines(t, path, 0, 3) // "line 0\n" … : 7 bytes each
	s := openSource(t, t.Context(), path, sdk.Position("7"))
	r, err := s.Read(t.Context())
	is.NoErr(err)
	is.Equal(r.Payload.After, sdk.RawData("line 1"))
	is.Equal(r.Key, sdk.RawData("1"))
	is.Equal(string(r.Position), "14")
}

// A line is read once its newline is written: the source waits for the
// rest of a line being written.
func TestSourceWaitsForAWholeLine(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "in.txt")
	appendFile(t, path, "whole\nhal")
	s := openSource(t, t.Context(), path, nil)
	r, err := s.Read(t.Context())
	is.NoErr(err)
	is.Equal(r.Payload.After, sdk.RawData("whole"))

	short, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	r, err = s.Read(short)
	is.True(errors.Is(err, context.DeadlineExceeded)) // no record from half a line

	appendFile(t, path, "f\n")
	r, err = s.Read(t.Context())
	is.NoErr(err)
	is.Equal(r.Payload.After, sdk.RawData("half"))
	is.Equal(string(r.Position), "11")
}

// A file that does not exist yet is waited for, with a warning at Open.
func TestSourceWaitsForTheFile(t *testing.T) {
	is := is.New(t)
	var log bytes.Buffer
	ctx := sdk.ContextWithLogger(t.Context(), slog.New(slog.NewTextHandler(&log, nil)))
	path := filepath.Join(t.TempDir(), "later.txt")
	s := openSource(t, ctx, path, nil)
	is.True(strings.Contains(log.String(), path+" does not exist yet"))

	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := s.Read(short)
	is.True(errors.Is(err, context.DeadlineExceeded))

	writeLines(t, path, 0, 1)
	r, err := s.Read(ctx)
	is.NoErr(err)
	is.Equal(r.Payload.After, sdk.RawData("line 0"))
}

// What cannot be read fails with an error that says why.
func TestSourceErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "in.txt")
	writeLines(t, path, 0, 3)

	t.Run("a directory", func(t *testing.T) {
		s, _ := file.NewSource(file.Config{Path: dir})
		err := s.Open(t.Context(), nil)
		if err == nil || !strings.Contains(err.Error(), `parameter "path": `+dir+" is a directory") {
			t.Fatalf("Open returned %v", err)
		}
	})
	t.Run("a position that is not an offset", func(t *testing.T) {
		s, _ := file.NewSource(file.Config{Path: path})
		err := s.Open(t.Context(), sdk.Position("x"))
		if err == nil || !strings.Contains(err.Error(), `position "x" is not a file position`) {
			t.Fatalf("Open returned %v", err)
		}
	})
	t.Run("a truncated file", func(t *testing.T) {
		s := openSource(t, t.Context(), path, sdk.Position("14"))
		if err := os.Truncate(path, 7); err != nil {
			t.Fatal(err)
		}
		_, err := s.Read(t.Context())
		if err == nil || !strings.Contains(err.Error(), path+" is 7 bytes long, shorter than the 14 bytes read") {
			t.Fatalf("Read returned %v", err)
		}
	})
	t.Run("a line longer than a record may be", func(t *testing.T) {
		long := filepath.Join(dir, "long.txt")
		appendFile(t, long, "short\n"+strings.Repeat("x", 4<<20+1)+"\n")
		s := openSource(t, t.Context(), long, nil) // Conduit's default limit, 4 MiB
		if _, err := s.Read(t.Context()); err != nil {
			t.Fatal(err)
		}
		_, err := s.Read(t.Context())
		want := long + ": the line at offset 6 exceeds the limit of " + strconv.Itoa(4<<20) + " bytes"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Read returned %v, want %q", err, want)
		}
	})
}
