package e2e

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// incumbentSettings are, for each role, every sdk.* parameter the
// incumbent SDK's specification lists (TestSpecificationMatchesIncumbent
// holds connkit's to them), set as a pipeline written for the incumbent
// might set them: to values other than the defaults wherever another value
// makes sense. sdk.schema.extract.type has one value only, avro.
var incumbentSettings = struct{ source, destination map[string]string }{
	source: map[string]string{
		"sdk.batch.size":                     "200",
		"sdk.batch.delay":                    "20ms",
		"sdk.schema.context.enabled":         "true",
		"sdk.schema.context.name":            "parity",
		"sdk.schema.extract.type":            "avro",
		"sdk.schema.extract.payload.enabled": "true",
		"sdk.schema.extract.payload.subject": "generated-payload",
		"sdk.schema.extract.key.enabled":     "true",
		"sdk.schema.extract.key.subject":     "generated-key",
	},
	destination: map[string]string{
		"sdk.batch.size":                     "100",
		"sdk.batch.delay":                    "10ms",
		"sdk.rate.perSecond":                 "50000",
		"sdk.rate.burst":                     "500",
		"sdk.record.format":                  "debezium/json",
		"sdk.record.format.options":          "debezium.schema.name=parity.generated,debezium.rawData.key=raw",
		"sdk.schema.extract.payload.enabled": "true",
		"sdk.schema.extract.key.enabled":     "false",
	},
}

// TestIncumbentSettingsAreComplete checks that incumbentSettings sets every
// sdk.* parameter the incumbent's plugins declare, so that
// TestIncumbentPipelineFile keeps up with them.
func TestIncumbentSettingsAreComplete(t *testing.T) {
	dir := incumbentBin(t)
	is := is.New(t)
	source := sdkParams(specify(t, filepath.Join(dir, "generator")).SourceParams)
	destination := sdkParams(specify(t, filepath.Join(dir, "log")).DestinationParams)
	is.Equal(slices.Sorted(maps.Keys(source)), slices.Sorted(maps.Keys(incumbentSettings.source)))
	is.Equal(slices.Sorted(maps.Keys(destination)), slices.Sorted(maps.Keys(incumbentSettings.destination)))
}

// TestIncumbentPipelineFile runs, in real Conduit with both engines, a
// pipeline file that sets every sdk.* parameter of the incumbent SDK on
// connkit's generator, log and postgres plugins, and checks that Conduit
// takes it without complaint, every record is acked, and the settings did
// what they say where their effect can be seen from outside:
//
//   - sdk.record.format and its options: the log destination's records are
//     Debezium JSON with the schema name given;
//   - sdk.schema.extract.payload.* and sdk.schema.context.* on the source:
//     the payload schema's subject, in each record's metadata (Debezium's
//     source block), is the context name, a colon and the subject given;
//   - sdk.schema.extract.payload.enabled on the destinations: the payload
//     reaches the connectors decoded, as fields, not as Avro bytes under the
//     raw data key, and the rows in Postgres have every column.
//
// The key settings have nothing to act on, since the generator's keys are
// raw; batching and rate limits have effects only in timing, which this
// test does not assert.
func TestIncumbentPipelineFile(t *testing.T) {
	const records = 2000
	for _, tt := range []struct {
		name  string
		flags []string
	}{
		{name: "default engine"},
		{name: "v2 engine", flags: []string{"--preview.pipeline-arch-v2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			url := database(t)
			generator := generatorSettings(records)
			// Two pipelines, as the v2 engine takes one destination per
			// pipeline; each source has its own schema context.
			pipeline := pipelineYAML("standalone:generator", merge(incumbentSettings.source, generator),
				"standalone:log", merge(incumbentSettings.destination, map[string]string{"level": "info"})) +
				pipelineEntry("e2e-pg", "standalone:generator", merge(incumbentSettings.source, generator, map[string]string{"sdk.schema.context.name": "parity-pg"}),
					"standalone:postgres", merge(incumbentSettings.destination, map[string]string{"url": url, "table": "generated", "key": "seq"}))
			c := startConduit(t, pipeline, tt.flags...)
			c.waitForPipelineAcked("e2e", records)
			c.waitForPipelineAcked("e2e-pg", records)
			c.checkDelivered("e2e", "standalone:log", records)
			c.checkDelivered("e2e-pg", "standalone:postgres", records)
			is.Equal(count(t, url, `SELECT count(*) FROM generated WHERE name IS NOT NULL AND n IS NOT NULL AND at IS NOT NULL`), int64(records))
			c.stop()
			c.checkProblems()

			events := c.loggedRecords("e2e:destination")
			is.Equal(len(events), records) // the log destination logged each record once
			for _, line := range events {
				var e debeziumEvent
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					t.Fatalf("the log destination's record is not JSON (%v): %s", err, line)
				}
				is.Equal(e.Schema.Name, "parity.generated")                                      // debezium.schema.name
				is.Equal(e.Payload.Op, "c")                                                      // a Debezium create
				is.Equal(slices.Sorted(maps.Keys(e.Payload.After)), []string{"at", "n", "name"}) // decoded fields, no raw Avro
				is.Equal(e.Payload.Source["opencdc.payload.schema.subject"], "parity:generated-payload")
				is.Equal(e.Payload.Source["opencdc.payload.schema.version"], "1") // one shape, one schema
			}
		})
	}
}

// debeziumEvent is the part of a Debezium JSON record the test checks.
type debeziumEvent struct {
	Schema struct {
		Name string
	}
	Payload struct {
		After  map[string]any
		Source map[string]string
		Op     string
	}
}

// loggedRecords returns what the log destination with the given connector
// ID logged for each record, as Conduit re-logged its plugin's lines.
func (c *conduit) loggedRecords(connectorID string) []string {
	var out []string
	for line := range strings.SplitSeq(c.Log(), "\n") {
		var entry struct {
			ConnectorID string `json:"connector_id"`
			Message     string
			Record      *string
		}
		if json.Unmarshal([]byte(line), &entry) == nil && entry.ConnectorID == connectorID && entry.Message == "record" && entry.Record != nil {
			out = append(out, *entry.Record)
		}
	}
	return out
}
