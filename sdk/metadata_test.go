package sdk

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
)

// The metadata keys are Conduit's, as conduit-commons spells them.
func TestMetadataKeysAreConduits(t *testing.T) {
	for _, k := range []struct{ ours, conduits string }{
		{MetadataCollection, opencdc.MetadataCollection},
		{MetadataReadAt, opencdc.MetadataReadAt},
		{MetadataConduitSourceConnectorID, opencdc.MetadataConduitSourceConnectorID},
	} {
		if k.ours != k.conduits {
			t.Errorf("metadata key %q, Conduit's is %q", k.ours, k.conduits)
		}
	}
}

// TestExamplesNameMetadataKeys holds the examples and the templates of
// connkit new to the names of the metadata keys: their Go code reads and
// writes sdk.MetadataCollection and the others, not the keys spelled by
// hand, where a typo compiles. A Go template a pipeline author would write
// ({{ index .Metadata "opencdc.collection" }}) spells the key, as the
// author does.
func TestExamplesNameMetadataKeys(t *testing.T) {
	keys := map[string]string{
		MetadataCollection:               "MetadataCollection",
		MetadataReadAt:                   "MetadataReadAt",
		MetadataConduitSourceConnectorID: "MetadataConduitSourceConnectorID",
	}
	var quoted []string
	for k := range keys {
		quoted = append(quoted, regexp.QuoteMeta(k))
	}
	spelled := regexp.MustCompile(`(index \.Metadata )?"(` + strings.Join(quoted, "|") + `)"`)
	checked := 0
	for _, root := range []string{"../examples", "cmd/connkit/template"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".go.tmpl") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			checked++
			for _, at := range spelled.FindAllSubmatchIndex(b, -1) {
				if at[2] >= 0 {
					continue // a Go template's
				}
				key := string(b[at[4]:at[5]])
				line := 1 + strings.Count(string(b[:at[0]]), "\n")
				t.Errorf("%s:%d spells %q; use sdk.%s", path, line, key, keys[key])
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked == 0 {
		t.Fatal("no Go files found to check")
	}
}
