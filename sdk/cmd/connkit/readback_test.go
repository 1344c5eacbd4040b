package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/connkit/connkit/sdk"
)

// TestReadLinesSaysWhatItFound writes a new destination's module, and
// checks with a test of its own that its read-back helper, readLines,
// reads back what the destination writes, and, given what a destination
// changed to write only the payload would write, fails with an error that
// says which line, what it found and what it wants, instead of panicking
// in the record's JSON decoding.
func TestReadLinesSaysWhatItFound(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lines")
	if err := newConnector([]string{"lines", "-destination", "-dir", dir, "-connkit", "../../.."}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	record, err := json.Marshal(sdk.Create(sdk.Position("1"), sdk.Metadata{"m": "v"}, nil, sdk.StructuredData{"id": 1, "name": "sdktest-1"}))
	if err != nil {
		t.Fatal(err)
	}
	const want = "; want a record as the destination writes it, OpenCDC JSON with position, operation, metadata, key and payload (before and after): " +
		"change readLines together with the destination"
	cases := []struct {
		file, content, want string // want: readLines' error, empty for none
	}{
		{"record.jsonl", string(record) + "\n", ""},
		{"payload.jsonl", string(record) + "\n" + `{"id":2,"name":"sdktest-2"}` + "\n",
			`line 2 of payload.jsonl: found {"id":2,"name":"sdktest-2"}, without position, operation, metadata, key, payload` + want},
		{"raw.jsonl", "sdktest-1\n", "line 1 of raw.jsonl: found sdktest-1, not a JSON object" + want},
		{"after.jsonl", `{"payload":{"after":{"id":1}}}` + "\n",
			`line 1 of after.jsonl: found {"payload":{"after":{"id":1}}}, without position, operation, metadata, key, payload.before` + want},
	}
	var rows strings.Builder
	for _, c := range cases {
		if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&rows, "\t\t{%q, %q},\n", c.file, c.want)
	}
	test := `package lines_test

import "testing"

func TestReadLinesSaysWhatItFound(t *testing.T) {
	for _, tt := range []struct{ file, want string }{
` + rows.String() + `	} {
		records, err := readLines(tt.file)
		switch {
		case tt.want == "" && (err != nil || len(records) != 1):
			t.Errorf("readLines(%q) = %d records, %v; want 1, no error", tt.file, len(records), err)
		case tt.want != "" && (err == nil || err.Error() != tt.want):
			t.Errorf("readLines(%q) = %v\nwant %s", tt.file, err, tt.want)
		}
	}
}
`
	if err := os.WriteFile(filepath.Join(dir, "readback_test.go"), []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "go", "test", "-count=1", "-run", "^TestReadLinesSaysWhatItFound$", ".")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the new module's read-back test: %v\n%s", err, out)
	}
}
