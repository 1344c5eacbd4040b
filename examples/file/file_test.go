package file_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/connkit/connkit/examples/file"
	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/sdktest"
)

// The destination's lines are the records in OpenCDC JSON, which the
// suite reads back.
func TestDestination(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.txt")
	sdktest.Destination(t, sdktest.DestinationSuite{
		Connector: file.Connector,
		Config:    map[string]string{"path": path},
		ReadBack:  func(context.Context) ([]sdk.Record, error) { return readRecords(path) },
		Plugin:    sdktest.Plugin("connkit-file", "./cmd/connkit-file"),
	})
}

func TestSource(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	writeLines(t, path, 0, 400) // the crash check reads 300, killing the plugin on the way
	sdktest.Source(t, sdktest.SourceSuite{
		Connector: file.Connector,
		Config:    map[string]string{"path": path},
		Plugin:    sdktest.Plugin("connkit-file", "./cmd/connkit-file"),
	})
}

// readRecords parses each line of the file at path as a record in
// OpenCDC JSON.
func readRecords(path string) ([]sdk.Record, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []sdk.Record
	for line := range bytes.Lines(data) {
		var r sdk.Record
		if err := json.Unmarshal(line, &r); err != nil {
			return out, fmt.Errorf("%s:%d: %w", path, len(out)+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// writeLines appends the lines "line <from>" … "line <to-1>" to the file
// at path, creating it if it does not exist.
func writeLines(t *testing.T, path string, from, to int) {
	t.Helper()
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	appendFile(t, path, b.String())
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}
