package file_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/connkit/connkit/examples/file"
	"github.com/connkit/connkit/middleware/format"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// The destination appends each record as its bytes, in the record format
// set on it, and a newline, after what the file holds.
func TestDestinationAppends(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "out.txt")
	appendFile(t, path, "before\n")
	d, err := file.NewDestination(file.Config{Path: path})
	is.NoErr(err)
	is.NoErr(d.Open(t.Context()))
	defer d.Teardown(context.Background())
	records := []sdk.Record{
		{Position: sdk.Position("1"), Operation: sdk.OperationCreate, Key: sdk.RawData("1"), Payload: sdk.Change{After: sdk.RawData("one")}},
		{Position: sdk.Position("2"), Operation: sdk.OperationUpdate, Metadata: sdk.Metadata{"m": "v"}, Payload: sdk.Change{After: sdk.StructuredData{"a": 1}}},
	}
	template, err := format.New(format.Template, `{{printf "%s" .Payload.After}}`)
	is.NoErr(err)
	records[0].SetSerializer(template) // as sdk.record.format does
	n, err := d.Write(t.Context(), records)
	is.NoErr(err)
	is.Equal(n, 2)
	got, err := os.ReadFile(path)
	is.NoErr(err)
	is.Equal(string(got), "before\none\n"+`{"position":"Mg==","operation":"update","metadata":{"m":"v"},"key":null,"payload":{"before":null,"after":{"a":1}}}`+"\n")
}

// A failed write returns how many lines were written whole and an error
// naming the file.
func TestDestinationWriteFailure(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full to fail writes with")
	}
	is := is.New(t)
	d, err := file.NewDestination(file.Config{Path: "/dev/full"})
	is.NoErr(err)
	is.NoErr(d.Open(t.Context()))
	defer d.Teardown(context.Background())
	n, err := d.Write(t.Context(), []sdk.Record{{Position: sdk.Position("1")}})
	is.Equal(n, 0)
	is.True(err != nil && strings.Contains(err.Error(), "write /dev/full: "))
}
