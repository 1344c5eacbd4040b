package format

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
)

// The files testdata/*.golden hold what the incumbent SDK,
// github.com/conduitio/conduit-connector-sdk v0.14.1 (with conduit-commons
// v0.6.0), writes for the records and settings of cases_test.go. A small
// program outside this module wrote them: it compiled cases_test.go as is
// and ran each record through the incumbent's serializer for each setting
// (GenericRecordSerializer with OpenCDCConverter or DebeziumConverter and
// JSONEncoder, or TemplateRecordSerializer), configured with the same
// options. One change: the incumbent lists the fields of a map in a
// Debezium schema in Go's random map order, so the program sorted those
// fields (kafkaconnect.SortFields on the before, after and source schemas),
// which gives one of the incumbent's possible outputs, the one this package
// writes.
//
// A file has a section per record, "-- name --" and then the bytes and a
// newline, or "!error" where the serializer failed.

var sectionHead = regexp.MustCompile(`(?m)^-- (.+) --\n`)

func readGolden(t *testing.T, file string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file+".golden"))
	if err != nil {
		t.Fatal(err)
	}
	sections := make(map[string]string)
	heads := sectionHead.FindAllSubmatchIndex(b, -1)
	for i, h := range heads {
		end := len(b)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		sections[string(b[h[2]:h[3]])] = strings.TrimSuffix(string(b[h[1]:end]), "\n")
	}
	return sections
}

func TestGolden(t *testing.T) {
	for _, f := range goldenFormats() {
		t.Run(f.file, func(t *testing.T) {
			want := readGolden(t, f.file)
			s, err := New(f.name, f.options)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range goldenRecords() {
				w, ok := want[r.name]
				if !ok {
					t.Fatalf("%s: no golden output", r.name)
				}
				got, err := s.Serialize(r.rec)
				switch {
				case w == "!error" && err == nil:
					t.Errorf("%s: got %s, want an error", r.name, got)
				case w == "!error":
				case err != nil:
					t.Errorf("%s: %v", r.name, err)
				case string(got) != w:
					t.Errorf("%s:\n got %s\nwant %s", r.name, got, w)
				}
			}
		})
	}
}

// OpenCDC JSON is what Record.Bytes writes with no serializer set.
func TestOpenCDCJSONIsRecordBytes(t *testing.T) {
	s, err := New(OpenCDCJSON, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range goldenRecords() {
		got, err := s.Serialize(r.rec)
		if err != nil {
			t.Fatal(err)
		}
		if want := r.rec.Bytes(); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", r.name, got, want)
		}
		// And with the serializer set, Record.Bytes writes the same.
		rec := r.rec
		rec.SetSerializer(s)
		if b := rec.Bytes(); !bytes.Equal(b, got) {
			t.Errorf("%s: Bytes with the serializer set: %s", r.name, b)
		}
	}
}

var _ opencdc.RecordSerializer = openCDCJSON{}
