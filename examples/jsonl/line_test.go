package jsonl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
