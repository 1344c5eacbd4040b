package jsonl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// Lines keep the kind of each data, also when it is empty.
func TestLineRoundTrip(t *testing.T) {
	is := is.New(t)
	for _, r := range []sdk.Record{
		{Position: sdk.Position("1"), Operation: sdk.OperationCreate, Key: sdk.StructuredData{}, Payload: sdk.Change{After: sdk.StructuredData{"a": "b"}}},
		{Position: sdk.Position("2"), Operation: sdk.OperationUpdate, Key: sdk.RawData("k"), Payload: sdk.Change{Before: sdk.StructuredData(nil), After: sdk.RawData("x")}},
		{Position: sdk.Position("3"), Operation: sdk.OperationDelete, Metadata: sdk.Metadata{"m": "v"}},
	} {
		b, err := encode(r)
		is.NoErr(err)
		got, err := decode(b)
		is.NoErr(err)
		if r.Payload.Before != nil && len(r.Payload.Before.(sdk.StructuredData)) == 0 {
			r.Payload.Before = sdk.StructuredData{}
		}
		is.Equal(got, r)
	}
}

// A file that cannot be put back to its last whole line after a failed
// Write breaks the destination: later Writes fail rather than append after
// lines nobody acknowledged.
func TestBrokenAfterFailedRollBack(t *testing.T) {
	is := is.New(t)
	d, err := NewDestination(DestinationConfig{Path: filepath.Join(t.TempDir(), "out.jsonl"), Sync: true})
	is.NoErr(err)
	is.NoErr(d.Open(context.Background()))
	is.NoErr(d.f.Close()) // every file operation fails from here
	is.True(d.cut(d.size) != nil)
	n, err := d.Write(context.Background(), []sdk.Record{{Position: sdk.Position("1")}})
	is.Equal(n, 0)
	is.True(errors.Is(err, os.ErrClosed))
	is.True(strings.Contains(err.Error(), "unknown state after a failed write"))
}

// The source reads a line of any length up to the record size limit whole,
// and stops at a longer one with an error that names it.
func TestSourceLongLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "long.jsonl")
	rec := func(pos string, size int) sdk.Record {
		return sdk.Record{Position: sdk.Position(pos), Operation: sdk.OperationCreate,
			Payload: sdk.Change{After: sdk.StructuredData{"s": strings.Repeat("z", size)}}}
	}
	small, mib3, mib5 := rec("a", 10), rec("b", 3<<20), rec("c", 5<<20)
	var file []byte
	var offsets []int
	for _, r := range []sdk.Record{small, mib3, mib5} {
		b, err := encode(r)
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, len(file))
		file = append(append(file, b...), '\n')
	}
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(ctx context.Context, n int) ([]sdk.Record, error) {
		t.Helper()
		s, err := NewSource(SourceConfig{Path: path, Poll: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Teardown(ctx)
		if err := s.Open(ctx, nil); err != nil {
			t.Fatal(err)
		}
		var out []sdk.Record
		for range n {
			r, err := s.Read(ctx)
			if err != nil {
				return out, err
			}
			out = append(out, r)
		}
		return out, nil
	}

	t.Run("default limit", func(t *testing.T) {
		is := is.New(t)
		got, err := read(t.Context(), 3)
		is.Equal(len(got), 2)
		is.Equal(got[1].Payload.After, mib3.Payload.After) // read whole
		is.Equal(got[1].Position, sdk.Position(strconv.Itoa(offsets[2])))
		is.True(err != nil)
		is.Equal(err.Error(), fmt.Sprintf("%s: the line at offset %d exceeds the limit of %d bytes, the plugin's record size limit", path, offsets[2], 4<<20))
	})

}

// A line is as long as the limit, newline aside, and no longer; what
// follows the last newline is no line yet.
func TestLines(t *testing.T) {
	for _, tt := range []struct {
		in      string
		limit   int
		want    string
		wantErr error
	}{
		{"abcd\n", 4, "abcd\n", nil},
		{"abcde\n", 4, "", bufio.ErrTooLong},
		{"abcd", 4, "", nil},
		{"abcde", 4, "", bufio.ErrTooLong},
		{strings.Repeat("x", 40) + "\n", 40, strings.Repeat("x", 40) + "\n", nil},
		{strings.Repeat("x", 41) + "\n", 40, "", bufio.ErrTooLong},
		{strings.Repeat("x", 5000) + "\n", 5000, strings.Repeat("x", 5000) + "\n", nil}, // longer than the first buffer
		{strings.Repeat("x", 5001) + "\n", 5000, "", bufio.ErrTooLong},
		{strings.Repeat("x", 30) + "\nnext", 40, strings.Repeat("x", 30) + "\n", nil},
	} {
		is := is.New(t)
		s := lines(strings.NewReader(tt.in), tt.limit)
		is.Equal(s.Scan(), tt.want != "")
		is.Equal(s.Err(), tt.wantErr)
		is.Equal(string(s.Bytes()), tt.want)
	}
}

// A line that is not valid UTF-8 is refused, not read with U+FFFD in
// place of its bytes.
func TestDecodeRefusesInvalidUTF8(t *testing.T) {
	is := is.New(t)
	_, err := decode([]byte("{\"operation\":\"create\",\"after\":{\"structured\":{\"name\":\"a\xffb\"}}}"))
	is.True(err != nil)
	is.Equal(err.Error(), `not valid UTF-8 text (byte 54): raw data belongs in "raw", as base64`)
}
