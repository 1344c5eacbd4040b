package sdk

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	connmetrics "github.com/connkit/connkit/internal/metrics"
	"github.com/connkit/connkit/internal/plugin"
	"github.com/connkit/connkit/middleware"
	"github.com/connkit/connkit/sdk/config"
)

// The sdk.* parameters, which the SDK adds to every connector with the
// incumbent Conduit SDK's names, types, defaults and meanings (sdk.batch.bytes
// and sdk.retry.* are connkit's own). A role's are one struct, parsed in
// the same call as the connector's own config struct; a connector changes
// their defaults by name (see Connector.SourceDefaults).
type (
	// sourceSettings are the sdk.* parameters of every source.
	sourceSettings struct {
		Batch   batching `param:"sdk.batch"`
		Metrics metrics  `param:"sdk.metrics"`
		Schema  struct {
			Type           string `param:"extract.type" default:"avro" validate:"inclusion=avro" desc:"The type of schema extracted from structured data."`
			Payload        bool   `param:"extract.payload.enabled" default:"true" desc:"Whether to extract a schema from structured payloads and encode them with it."`
			PayloadSubject string `param:"extract.payload.subject" default:"payload" desc:"The subject of payload schemas; a record's opencdc.collection, if any, is put before it with a dot."`
			Key            bool   `param:"extract.key.enabled" default:"true" desc:"Whether to extract a schema from structured keys and encode them with it."`
			KeySubject     string `param:"extract.key.subject" default:"key" desc:"The subject of key schemas; a record's opencdc.collection, if any, is put before it with a dot."`
			Context        bool   `param:"context.enabled" default:"true" desc:"Whether subjects are registered in a schema context, so that connectors cannot clash; without one, subjects are used as they are."`
			ContextName    string `param:"context.name" desc:"The schema context; empty means the connector's ID."`
		} `param:"sdk.schema"`
	}

	// destinationSettings are the sdk.* parameters of every destination.
	destinationSettings struct {
		Batch   batching `param:"sdk.batch"`
		Metrics metrics  `param:"sdk.metrics"`
		Retry   struct {
			Attempts int           `param:"attempts" default:"8" validate:"gt=-1" desc:"How many times records are written again after a Write fails with an error the connector marks retryable (a dropped connection, a timeout), before they are nacked; 0 means never."`
			Delay    time.Duration `param:"delay" default:"100ms" validate:"gt=-1" desc:"The longest wait before the first retry; each later wait may be twice as long, up to sdk.retry.maxDelay. Each wait is drawn at random from the upper half of its range."`
			MaxDelay time.Duration `param:"maxDelay" default:"10s" validate:"gt=-1" desc:"The longest wait between two attempts; at least sdk.retry.delay."`
		} `param:"sdk.retry"`
		Write struct {
			Concurrency string `param:"concurrency" default:"auto" desc:"How many Writes may be in flight together, their records acknowledged in order: auto adds Writes while they bring more records per second and stops where more would only wait longer, backing off when the destination pushes back, up to 32; a number fixes it; 1 writes one batch at a time. A destination that does not take concurrent Writes writes one at a time with auto, and refuses another number."`
		} `param:"sdk.write"`
		Schema struct {
			Payload bool `param:"payload.enabled" default:"true" desc:"Whether to decode the record payload with the schema its metadata names (opencdc.payload.schema.subject and .version)."`
			Key     bool `param:"key.enabled" default:"true" desc:"Whether to decode the record key with the schema its metadata names (opencdc.key.schema.subject and .version)."`
		} `param:"sdk.schema.extract"`
		Record struct {
			Format  string `param:"format" default:"opencdc/json" validate:"inclusion=opencdc/json|debezium/json|template" desc:"The format of the bytes a destination writes for a record: opencdc/json, debezium/json or template (a Go text/template in sdk.record.format.options)."`
			Options string `param:"format.options" desc:"Options of the record format: for debezium/json, debezium.schema.name and debezium.rawData.key as key=value pairs separated by commas; for template, the template."`
		} `param:"sdk.record"`
		Rate struct {
			PerSecond float64 `param:"perSecond" default:"0" validate:"gt=-1" desc:"Maximum number of records written per second; 0 means no limit."`
			Burst     int     `param:"burst" default:"0" validate:"gt=-1" desc:"Number of records that may be written at once, in one Write; 0 means the rate per second, rounded up."`
		} `param:"sdk.rate"`

		// formatRecords is the record format's middleware, which Validate
		// makes.
		formatRecords func(middleware.Write) middleware.Write
	}

	// metrics is what the SDK measures of a connector, and where it shows
	// it: sources and destinations have it.
	metrics struct {
		Address  string        `param:"address" desc:"Where the connector serves its metrics in the Prometheus text format, at http://ADDRESS/metrics: host:port, such as 127.0.0.1:9464. Empty: they are not served."`
		LogEvery time.Duration `param:"logInterval" default:"1m" validate:"gt=-1" desc:"How often the connector logs a progress line, what its metrics say, while records move; a connector with nothing to do logs none. 0: never."`
	}

	// batching is the batching policy's parameters, which sources and
	// destinations share (see the package doc's Batching).
	batching struct {
		Size  int           `param:"size" default:"0" validate:"gt=-1" desc:"Maximum number of records in a batch; 0 means no count limit (sdk.batch.bytes bounds it). A batch is whatever has arrived, up to this many, when the connector is free (destinations) or Conduit takes the next message (sources): it never waits to fill unless sdk.batch.delay is set."`
		Delay time.Duration `param:"delay" default:"0" validate:"gt=-1" desc:"The longest an incomplete batch may wait to fill, from its oldest record on; 0 means it does not wait. A batch that reaches sdk.batch.size or sdk.batch.bytes goes at once."`
		// The default fits one of Conduit's messages, 4 MiB, less room for
		// what a message carries besides the records: 4 MiB − 256 KiB.
		Bytes int `param:"bytes" default:"3932160" validate:"gt=-1" desc:"Maximum size of a batch in bytes, which bounds memory; a larger record travels alone. 0 means no byte limit. The default fits one of Conduit's messages (4 MiB); a source's messages are split to fit Conduit's limit whatever this says."`
	}
)

// subjects says which of the source's structured keys and payloads are
// encoded, and under which subjects, for the connector Conduit knows by
// connectorID.
func (s sourceSettings) subjects(connectorID string) middleware.Subjects {
	var subjects middleware.Subjects
	if s.Schema.Key {
		subjects.Key = s.Schema.KeySubject
	}
	if s.Schema.Payload {
		subjects.Payload = s.Schema.PayloadSubject
	}
	if s.Schema.Context {
		subjects.Context = cmp.Or(s.Schema.ContextName, connectorID)
	}
	return subjects
}

// Validate reports the source settings that do not fit together.
func (s *sourceSettings) Validate() error { return s.Metrics.validate() }

// Validate reports the destination settings that do not fit together,
// and makes the record format's middleware.
func (s *destinationSettings) Validate() error {
	errs := []error{s.Metrics.validate()}
	if s.Retry.MaxDelay < s.Retry.Delay {
		errs = append(errs, &config.ParameterError{Name: "sdk.retry.maxDelay", Value: s.Retry.MaxDelay.String(), Expected: fmt.Sprintf("at least the %v of \"sdk.retry.delay\"", s.Retry.Delay)})
	}
	if _, err := s.writeConcurrency(); err != nil {
		errs = append(errs, err)
	}
	var err error
	if s.formatRecords, err = middleware.FormatRecords(s.Record.Format, s.Record.Options); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validate reports an address the metrics cannot be served at.
func (m metrics) validate() error {
	if m.Address == "" {
		return nil
	}
	if err := connmetrics.CheckAddress(m.Address); err != nil {
		return &config.ParameterError{Name: "sdk.metrics.address", Value: m.Address, Expected: err.Error()}
	}
	return nil
}

// set returns the metrics of the connector instance l names, or nil if
// they are neither served nor logged.
func (m metrics) set(l connmetrics.Labels) plugin.Metrics {
	if m.Address == "" && m.LogEvery == 0 {
		return plugin.Metrics{}
	}
	return plugin.Metrics{Set: connmetrics.New(l), Address: m.Address, LogEvery: m.LogEvery}
}

// withDefaults returns raw, with the connector's defaults for the
// parameters raw leaves out or empty.
func withDefaults(raw, defaults map[string]string) map[string]string {
	if len(defaults) == 0 {
		return raw
	}
	out := maps.Clone(raw)
	if out == nil {
		out = map[string]string{}
	}
	for name, v := range defaults {
		if !isSet(raw, name) {
			out[name] = v
		}
	}
	return out
}

// isSet reports whether raw gives name a value, with the tolerance of
// parsing: spaces around keys and values do not count.
func isSet(raw map[string]string, name string) bool {
	for k, v := range raw {
		if strings.TrimSpace(k) == name && strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

// autoConcurrency is the most Writes sdk.write.concurrency auto keeps in
// flight together.
const autoConcurrency = 32

// writeConcurrency returns sdk.write.concurrency as a number: 0 for auto.
func (s *destinationSettings) writeConcurrency() (int, error) {
	v := s.Write.Concurrency
	if v == "auto" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, &config.ParameterError{Name: "sdk.write.concurrency", Value: v, Expected: "auto or a number of Writes, at least 1"}
	}
	return n, nil
}

// concurrency is how many Writes of dst may be in flight together: one at
// a time unless dst is a ConcurrentDestination.
func (s *destinationSettings) concurrency(dst Destination) (plugin.Concurrency, error) {
	n, err := s.writeConcurrency()
	if err != nil {
		return plugin.Concurrency{}, err
	}
	c, ok := find[ConcurrentDestination](dst)
	switch {
	case !ok && n > 1:
		return plugin.Concurrency{}, &config.ParameterError{Name: "sdk.write.concurrency", Value: s.Write.Concurrency, Expected: "auto or 1: this destination writes one batch at a time"}
	case !ok:
		return plugin.Concurrency{Max: 1}, nil
	case n == 0:
		return plugin.Concurrency{Max: autoConcurrency, Adaptive: true, ByKey: c.WriteSplit() != SplitFreely}, nil
	}
	return plugin.Concurrency{Max: n, ByKey: c.WriteSplit() != SplitFreely}, nil
}
