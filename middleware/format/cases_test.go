package format

import (
	"github.com/conduitio/conduit-commons/opencdc"
)

// This file holds the records and settings of the golden tests. It imports
// nothing but conduit-commons so that the program that wrote the golden
// files (see golden_test.go) could compile the very same table.

// goldenRecord is a record of the golden tests, named for its file section.
type goldenRecord struct {
	name string
	rec  opencdc.Record
}

// goldenFormat is a setting of the golden tests; file names its golden file
// in testdata, without the .golden suffix.
type goldenFormat struct {
	file    string
	name    string
	options string
}

func goldenFormats() []goldenFormat {
	return []goldenFormat{
		{"opencdc-json", "opencdc/json", ""},
		{"debezium-json", "debezium/json", ""},
		{"debezium-json-schema-name", "debezium/json", "debezium.schema.name=users.Envelope"},
		{"debezium-json-rawdata-key", "debezium/json", "debezium.rawData.key=raw,debezium.schema.name=s"},
		{"template-position", "template", "{{ .Position }}"},
		{"template-payload-after", "template", "{{ .Payload.After }}"},
		{"template-after-field", "template", `{{ if .Payload.After }}{{ printf "%v" .Payload.After.name }}{{ end }}`},
		{"template-metadata", "template", "{{ .Operation }} {{ .Metadata }}"},
		{"template-tojson", "template", "{{ toJson . }}"},
		{"template-typeis", "template", `{{ if typeIs "opencdc.RawData" .Payload.After }}{{ printf "%s" .Payload.After }}{{ else }}{{ toJson .Payload.After }}{{ end }}`},
	}
}

// readAt is 2024-05-06T07:08:09.123456789Z in Unix nanoseconds.
const readAt = "1714979289123456789"

func goldenRecords() []goldenRecord {
	return []goldenRecord{
		{"create-structured", opencdc.Record{
			Position:  opencdc.Position("pos-1"),
			Operation: opencdc.OperationCreate,
			Metadata: opencdc.Metadata{
				opencdc.MetadataReadAt:     readAt,
				opencdc.MetadataCollection: "users",
				"conduit.source.plugin":    "generator",
			},
			Key:     opencdc.StructuredData{"id": 1},
			Payload: opencdc.Change{After: opencdc.StructuredData{"id": 1, "name": "ann", "score": 9.5}},
		}},
		{"update-structured", opencdc.Record{
			Position:  opencdc.Position("pos-2"),
			Operation: opencdc.OperationUpdate,
			Metadata:  opencdc.Metadata{opencdc.MetadataReadAt: readAt},
			Key:       opencdc.StructuredData{"id": 1},
			Payload: opencdc.Change{
				Before: opencdc.StructuredData{"id": 1, "name": "ann", "score": 9.5},
				After:  opencdc.StructuredData{"id": 1, "name": "anne", "score": 10.0},
			},
		}},
		{"delete-raw-key", opencdc.Record{
			Position:  opencdc.Position("pos-3"),
			Operation: opencdc.OperationDelete,
			Metadata:  opencdc.Metadata{"table": "users"},
			Key:       opencdc.RawData("user-1"),
			Payload:   opencdc.Change{Before: opencdc.StructuredData{"id": 1, "name": "anne"}},
		}},
		{"snapshot-raw", opencdc.Record{
			Position:  opencdc.Position("pos-4"),
			Operation: opencdc.OperationSnapshot,
			Metadata:  opencdc.Metadata{},
			Key:       opencdc.RawData("k"),
			Payload:   opencdc.Change{After: opencdc.RawData("plain text, not JSON")},
		}},
		{"raw-json-object", opencdc.Record{
			Position:  opencdc.Position("pos-5"),
			Operation: opencdc.OperationCreate,
			Key:       opencdc.RawData(`{"id":7}`),
			Payload:   opencdc.Change{After: opencdc.RawData(`{"b":"x","a":1.5,"n":null,"list":[1,"two"],"obj":{"z":true}}`)},
		}},
		{"raw-json-not-object", opencdc.Record{
			Position:  opencdc.Position("pos-6"),
			Operation: opencdc.OperationCreate,
			Payload:   opencdc.Change{Before: opencdc.RawData(`[1,2]`), After: opencdc.RawData(`null`)},
		}},
		{"raw-empty", opencdc.Record{
			Position:  opencdc.Position("pos-7"),
			Operation: opencdc.OperationUpdate,
			Key:       opencdc.RawData(nil),
			Payload:   opencdc.Change{Before: opencdc.RawData{}, After: opencdc.RawData("x")},
		}},
		{"nested-structured", opencdc.Record{
			Position:  opencdc.Position("pos-8"),
			Operation: opencdc.OperationCreate,
			Metadata:  opencdc.Metadata{opencdc.MetadataReadAt: readAt, "html": "<a href=\"x\">&</a>", "unicode": "zürich \u2028 ✓", "ctl\x02": "\xc3"},
			Key:       opencdc.StructuredData{},
			Payload: opencdc.Change{After: opencdc.StructuredData{
				"name":     "ann <b>&</b>",
				"ctl":      "a\b\f\x01\x7f\n\r\t\"\\z",
				"bad":      "\xff\xfeok\u2029",
				"f32s":     float32(1e-7),
				"neg":      -2.5e-8,
				"ok":       true,
				"none":     nil,
				"i8":       int8(-8),
				"i16":      int16(16),
				"i32":      int32(-32),
				"i64":      int64(1) << 60,
				"u8":       uint8(8),
				"u16":      uint16(16),
				"u32":      uint32(32),
				"u64":      uint64(64),
				"f32":      float32(1.1),
				"f64":      1e21,
				"small":    1e-7,
				"bytes":    []byte("bytes"),
				"strings":  []string{"a", "b"},
				"anys":     []any{1, "two"},
				"empty":    []any{},
				"nilfirst": []any{nil, 1},
				"nested": map[string]any{
					"inner": opencdc.StructuredData{"deep": []any{map[string]any{"x": 1}}},
					"count": 3,
				},
				"tags": map[string]string{"b": "2", "a": "1"},
			}},
		}},
		{"zero", opencdc.Record{}},
		{"bad-read-at", opencdc.Record{
			Position:  opencdc.Position("pos-10"),
			Operation: opencdc.OperationSnapshot,
			Metadata:  opencdc.Metadata{opencdc.MetadataReadAt: "yesterday"},
			Payload:   opencdc.Change{After: opencdc.StructuredData{"only": "one"}},
		}},
	}
}
