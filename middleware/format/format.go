package format

import (
	"fmt"
	"slices"
	"strings"

	"github.com/conduitio/conduit-commons/opencdc"
)

// The names of the record formats, the values of sdk.record.format.
const (
	// OpenCDCJSON is the record as OpenCDC JSON, what Record.Bytes returns
	// when no serializer is set. It is the default and takes no options.
	OpenCDCJSON = "opencdc/json"
	// DebeziumJSON is the record as a Debezium change event in a Kafka
	// Connect envelope (schema and payload).
	DebeziumJSON = "debezium/json"
	// Template is the output of a Go text/template executed on the record;
	// the options are the template.
	Template = "template"
)

// The parameters a destination's pipeline settings name the format with.
const (
	ParamFormat  = "sdk.record.format"
	ParamOptions = "sdk.record.format.options"
)

// The options of [DebeziumJSON].
const (
	// OptionDebeziumSchemaName sets the envelope schema's name (Kafka
	// Connect sinks may need one); by default it has none.
	OptionDebeziumSchemaName = "debezium.schema.name"
	// OptionDebeziumRawDataKey names the field that holds raw data that is
	// not a JSON object; by default [DefaultDebeziumRawDataKey].
	OptionDebeziumRawDataKey = "debezium.rawData.key"
)

// DefaultDebeziumRawDataKey is the default of [OptionDebeziumRawDataKey].
const DefaultDebeziumRawDataKey = "opencdc.rawData"

// Names returns the names of the record formats, sorted.
func Names() []string {
	return []string{DebeziumJSON, OpenCDCJSON, Template}
}

// New returns the serializer of the record format name, configured with
// options, the values of sdk.record.format and sdk.record.format.options.
//
// Options of [OpenCDCJSON] and [DebeziumJSON] are key=value pairs separated
// by commas (a key without "=" has an empty value); [OpenCDCJSON] takes
// none. The options of [Template] are the template. An error names the
// parameter at fault, the value and what is allowed.
//
// The serializer is safe for concurrent use.
func New(name, options string) (opencdc.RecordSerializer, error) {
	switch name {
	case OpenCDCJSON:
		if _, err := parseOptions(name, options, nil); err != nil {
			return nil, err
		}
		return openCDCJSON{}, nil
	case DebeziumJSON:
		opts, err := parseOptions(name, options, []string{OptionDebeziumRawDataKey, OptionDebeziumSchemaName})
		if err != nil {
			return nil, err
		}
		return newDebeziumJSON(opts), nil
	case Template:
		t, err := newTemplate(options)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
	return nil, fmt.Errorf("%s: %q is not a record format; expected one of %s",
		ParamFormat, name, strings.Join(Names(), ", "))
}

// parseOptions splits options of the form k=v,k=v and checks every key is
// one of allowed. Space around the whole string and around keys is ignored,
// and so are empty pairs; values are kept as written.
func parseOptions(format, options string, allowed []string) (map[string]string, error) {
	options = strings.TrimSpace(options)
	if options == "" {
		return nil, nil
	}
	opts := make(map[string]string)
	for pair := range strings.SplitSeq(options, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !slices.Contains(allowed, k) {
			if len(allowed) == 0 {
				return nil, fmt.Errorf("%s: %q is not an option of %s, which takes none", ParamOptions, k, format)
			}
			return nil, fmt.Errorf("%s: %q is not an option of %s; expected %s",
				ParamOptions, k, format, strings.Join(allowed, ", "))
		}
		opts[k] = v
	}
	return opts, nil
}
