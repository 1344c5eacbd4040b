package format

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/matryer/is"
)

func TestNames(t *testing.T) {
	is := is.New(t)
	is.True(slices.IsSorted(Names()))
	for _, name := range Names() {
		options := ""
		if name == Template {
			options = "{{ .Position }}"
		}
		_, err := New(name, options)
		is.NoErr(err)
	}
}

func TestNewErrors(t *testing.T) {
	for _, tt := range []struct {
		name, options string
		want          string
	}{
		{"avro/json", "", `sdk.record.format: "avro/json" is not a record format; expected one of debezium/json, opencdc/json, template`},
		{"", "", `sdk.record.format: "" is not a record format; expected one of`},
		{OpenCDCJSON, "pretty=true", `sdk.record.format.options: "pretty" is not an option of opencdc/json, which takes none`},
		{DebeziumJSON, "debezium.schema.name=x,debezium.rawdata.key=y", `sdk.record.format.options: "debezium.rawdata.key" is not an option of debezium/json; expected debezium.rawData.key, debezium.schema.name`},
		{Template, "", `sdk.record.format.options: format template needs a Go template`},
		{Template, "  ", `sdk.record.format.options: format template needs a Go template`},
		{Template, "{{ .Position ", `sdk.record.format.options: the template does not parse`},
		{Template, "{{ upper .Position }}", `function "upper" not defined`},
	} {
		t.Run(tt.name+" "+tt.options, func(t *testing.T) {
			s, err := New(tt.name, tt.options)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
			if s != nil {
				t.Fatalf("got a serializer with the error: %#v", s)
			}
		})
	}
}

func TestOptionsSyntax(t *testing.T) {
	is := is.New(t)
	rec := opencdc.Record{Operation: opencdc.OperationCreate, Payload: opencdc.Change{After: opencdc.RawData("x")}}
	for options, name := range map[string]string{
		" debezium.schema.name=a=b , debezium.rawData.key=k,": "a=b ",
		"debezium.rawData.key=k, debezium.schema.name=a=b":    "a=b",
	} {
		s, err := New(DebeziumJSON, options)
		is.NoErr(err)
		b, err := s.Serialize(rec)
		is.NoErr(err)
		is.True(strings.Contains(string(b), `"name":"`+name+`"`))    // values are kept as written
		is.True(strings.Contains(string(b), `"after":{"k":"eA=="}`)) // raw data under the key
	}
	// Whitespace only, or an option without a value, is no option.
	for _, options := range []string{"   ", "debezium.rawData.key"} {
		s, err := New(DebeziumJSON, options)
		is.NoErr(err)
		b, err := s.Serialize(rec)
		is.NoErr(err)
		is.True(strings.Contains(string(b), `"after":{"opencdc.rawData":"eA=="}`))
	}
}

func TestSerializeErrors(t *testing.T) {
	is := is.New(t)
	bad := opencdc.Record{Payload: opencdc.Change{After: opencdc.StructuredData{"f": math.NaN()}}}
	for _, name := range []string{OpenCDCJSON, DebeziumJSON} {
		s, err := New(name, "")
		is.NoErr(err)
		_, err = s.Serialize(bad)
		is.True(err != nil)
	}
	s, err := New(DebeziumJSON, "")
	is.NoErr(err)
	_, err = s.Serialize(opencdc.Record{Payload: opencdc.Change{After: opencdc.StructuredData{"ch": make(chan int)}}})
	is.True(err != nil && strings.Contains(err.Error(), "chan int"))

	// Record.Bytes falls back to OpenCDC JSON where the serializer fails.
	s, err = New(Template, "{{ .Metadata.missing }}")
	is.NoErr(err)
	rec := opencdc.Record{Position: opencdc.Position("p")}
	_, err = s.Serialize(rec)
	is.True(err != nil)
	want := rec.Bytes()
	rec.SetSerializer(s)
	is.Equal(string(rec.Bytes()), string(want))
}

func TestTemplateFuncs(t *testing.T) {
	rec := opencdc.Record{
		Position: opencdc.Position("p1"),
		Key:      opencdc.RawData("k<1>"),
		Payload:  opencdc.Change{After: opencdc.StructuredData{"a": "<b>"}},
	}
	for _, tt := range []struct{ template, want string }{
		{`{{ toJson .Payload.After }}`, `{"a":"\u003cb\u003e"}`},
		{`{{ toRawJson .Payload.After }}`, `{"a":"<b>"}`},
		{`{{ toPrettyJson .Payload.After }}`, "{\n  \"a\": \"\\u003cb\\u003e\"\n}"},
		{`{{ toString .Position }}`, `p1`},
		{`{{ typeOf .Key }}`, `opencdc.RawData`},
		{`{{ typeIs "opencdc.RawData" .Key }}`, `true`},
		{`{{ printf "%s" .Key | b64enc }}`, `azwxPg==`},
		{`{{ b64dec "azwxPg==" }}`, `k<1>`},
	} {
		s, err := New(Template, tt.template)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Serialize(rec)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: got %s, %v; want %s", tt.template, got, err, tt.want)
		}
	}
}

// A serializer is shared by every Write of a destination.
func TestConcurrentUse(t *testing.T) {
	recs := goldenRecords()
	for _, f := range goldenFormats() {
		s, err := New(f.name, f.options)
		if err != nil {
			t.Fatal(err)
		}
		want := make([][]byte, len(recs))
		for i, r := range recs {
			want[i], _ = s.Serialize(r.rec)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 20 {
					for i, r := range recs {
						if got, _ := s.Serialize(r.rec); string(got) != string(want[i]) {
							t.Errorf("%s %s: got %s, want %s", f.file, r.name, got, want[i])
						}
					}
				}
			})
		}
		wg.Wait()
	}
}
