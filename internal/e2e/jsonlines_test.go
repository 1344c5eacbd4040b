package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
)

// readJSONLines decodes each line of the file at path into a T, in order,
// and fails t if the file cannot be read or a line is not a T. A line may
// be up to 16 MiB long.
func readJSONLines[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("line %d of %s: %v\n%s", len(out)+1, path, err, sc.Bytes())
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// dlqLine is a line of a dead-letter queue's file: Conduit's metadata,
// which holds the nack's error, and the nacked record as structured data.
type dlqLine struct {
	Metadata map[string]string
	After    struct{ Structured map[string]any }
}
