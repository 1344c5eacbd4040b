package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	conduitpkg "github.com/connkit/connkit/internal/conduit"
	"github.com/matryer/is"
)

// conduit is a Conduit server running in a temporary directory with
// connkit's plugins in its connectors directory, for one test.
type conduit struct {
	*conduitpkg.Server
	t *testing.T
}

// startConduit starts the server in CONDUIT_BIN with the given pipeline file
// and extra flags. It skips the test when CONDUIT_BIN is unset, unless CI is
// set, where a missing server is a failure.
func startConduit(t *testing.T, pipeline string, flags ...string) *conduit {
	t.Helper()
	return startConduitWith(t, pipeline, nil, flags...)
}

// startConduitWith is startConduit with more plugin binaries in the
// connectors directory next to connkit's.
func startConduitWith(t *testing.T, pipeline string, plugins []string, flags ...string) *conduit {
	t.Helper()
	return startServer(t, conduitpkg.Options{
		Bin:      conduitBin(t),
		Dir:      t.TempDir(),
		Pipeline: pipeline,
		Plugins:  append([]string{binary("connkit-generator"), binary("connkit-log"), binary("connkit-postgres")}, plugins...),
		Flags:    flags,
	})
}

// runConduit starts the server bin in dir, with the plugins in its
// connectors directory and the pipeline files in its pipelines directory,
// as a user would run it there, and an in-memory database on free ports.
func runConduit(t *testing.T, bin, dir string, flags ...string) *conduit {
	t.Helper()
	return startServer(t, conduitpkg.Options{Bin: bin, Dir: dir, Flags: flags})
}

func startServer(t *testing.T, opts conduitpkg.Options) *conduit {
	t.Helper()
	s, err := conduitpkg.Start(opts)
	if err != nil && strings.Contains(err.Error(), badgerEmptyMemtable) && strings.Contains(err.Error(), "Create a new file") {
		// Badger refuses, once, a memtable file that a kill left empty
		// (dgraph-io/badger#2207); the refusal makes the file whole, and an
		// operator's second start succeeds. The test restarts as one would.
		t.Logf("Conduit did not start on a store left by a kill (%s); starting it again", badgerEmptyMemtable)
		opts.Plugins, opts.Pipeline = nil, "" // laid out already
		s, err = conduitpkg.Start(opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			t.Logf("Conduit's log:\n%s", s.Log())
		}
	})
	return &conduit{Server: s, t: t}
}

// badgerEmptyMemtable is what Conduit's store says when it meets a
// memtable file that Conduit was killed right after creating.
const badgerEmptyMemtable = "while opening memtables"

// conduitBin returns the server in CONDUIT_BIN. It skips the test when
// that is unset, unless CI is set, where a missing server is a failure.
func conduitBin(t *testing.T) string {
	t.Helper()
	return fromMake(t, "CONDUIT_BIN", "Conduit")
}

// fromMake returns the environment variable name, which `make test` sets to
// what it built. It skips the test when that is unset, unless CI is set,
// where a missing build is a failure.
func fromMake(t *testing.T, name, what string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		msg := name + " is not set; `make test` builds " + what + " and sets it"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return v
}

// waitForAcked waits until Conduit reports n records through pipeline e2e,
// failing at once if the pipeline degrades.
func (c *conduit) waitForAcked(n int) {
	c.t.Helper()
	c.waitForPipelineAcked("e2e", n)
}

// waitForPipelineAcked waits until Conduit reports n records through
// pipeline id, failing at once if the pipeline degrades.
func (c *conduit) waitForPipelineAcked(id string, n int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 3*time.Minute)
	defer cancel()
	if err := c.WaitAcked(ctx, id, n); err != nil {
		c.t.Fatal(err)
	}
}

// stop interrupts Conduit, which stops its pipelines gracefully, and checks
// it exits cleanly.
func (c *conduit) stop() {
	c.t.Helper()
	if err := c.Stop(time.Minute); err != nil {
		c.t.Fatalf("Conduit exited with %v", err)
	}
}

// checkRunning fails the test unless pipeline id is running, without an
// error.
func (c *conduit) checkRunning(id string) {
	c.t.Helper()
	if status, errText := c.PipelineState(id); status != "STATUS_RUNNING" || errText != "" {
		c.t.Fatalf("pipeline %s is %s (error %q), expected STATUS_RUNNING", id, status, errText)
	}
}

// checkProblems fails the test if Conduit logged problems, other than the
// lines that contain one of expected.
func (c *conduit) checkProblems(expected ...string) {
	c.t.Helper()
	p := c.Problems()
	for _, s := range expected {
		p = without(p, s)
	}
	if len(p) > 0 {
		c.t.Errorf("Conduit logged problems:\n%s", strings.Join(p, "\n"))
	}
}

// without returns the lines that do not contain s.
func without(lines []string, s string) []string {
	return slices.DeleteFunc(lines, func(l string) bool { return strings.Contains(l, s) })
}

// settings renders a connector's settings for a pipeline file, sorted: those
// of every map, a later map's value winning.
func settings(ms ...map[string]string) string {
	all := merge(ms...)
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(all)) {
		fmt.Fprintf(&b, "          %s: %q\n", k, all[k])
	}
	return b.String()
}

// pipelineYAML is a pipeline file of one pipeline, e2e, from the plugin
// source to the plugin destination, each with its settings. What else the
// pipeline has, such as processors or a dead-letter queue, is appended.
func pipelineYAML(source string, sourceSettings map[string]string, destination string, destSettings map[string]string) string {
	return "version: \"2.2\"\npipelines:\n" + pipelineEntry("e2e", source, sourceSettings, destination, destSettings)
}

// pipelineEntry is pipeline id of a pipeline file's list, from the plugin
// source to the plugin destination, each with its settings.
func pipelineEntry(id, source string, sourceSettings map[string]string, destination string, destSettings map[string]string) string {
	return fmt.Sprintf(`  - id: %s
    status: running
    connectors:
      - id: source
        type: source
        plugin: %s
        settings:
%s      - id: destination
        type: destination
        plugin: %s
        settings:
%s`, id, source, settings(sourceSettings), destination, settings(destSettings))
}

// pipelineFile is a pipeline e2e from standalone:generator, making records
// of three structured fields, to a destination plugin, each with extra
// settings.
func pipelineFile(records int, source map[string]string, destination string, destSettings map[string]string) string {
	return pipelineYAML("standalone:generator", merge(generatorSettings(records), source), "standalone:"+destination, destSettings)
}

// generatorSettings are standalone:generator's settings for records
// records of three structured fields: name, n and at.
func generatorSettings(records int) map[string]string {
	return map[string]string{
		"format.type": "structured", "format.options.name": "string", "format.options.n": "int", "format.options.at": "time",
		"recordCount": fmt.Sprint(records),
	}
}

// deadLetterQueue is a pipeline's dead-letter queue for a pipeline file:
// a jsonl file at path, with the nack window given.
func deadLetterQueue(path string, windowSize, nackThreshold int) string {
	return fmt.Sprintf(`    dead-letter-queue:
      plugin: standalone:jsonl
      settings:
        path: %q
      window-size: %d
      window-nack-threshold: %d
`, path, windowSize, nackThreshold)
}

// executions returns how many records Conduit reports through pipeline id,
// acked or nacked.
func (c *conduit) executions(id string) float64 {
	n, _ := c.Latency(id)
	return n
}

// checkDelivered checks that Conduit reports exactly n records through
// pipeline id, none twice, and n written by its destination plugin, and
// that the pipeline runs.
func (c *conduit) checkDelivered(id, plugin string, n int) {
	c.t.Helper()
	is := is.New(c.t)
	is.Equal(c.executions(id), float64(n)) // exactly: no record twice
	is.Equal(c.Metric("conduit_connector_bytes_count", "pipeline_name="+id, "plugin="+plugin, "type=destination"), float64(n))
	c.checkRunning(id)
}

// TestConduit runs standalone:generator → standalone:log in real Conduit,
// with the default engine and the v2 engine, without and with batching, and
// checks through Conduit's metrics and API that every record was acked once,
// nothing failed, and the pipeline stops cleanly.
func TestConduit(t *testing.T) {
	const records = 10000
	for _, tt := range []struct {
		name                string
		flags               []string
		source, destination map[string]string
	}{
		{name: "default engine"},
		{name: "default engine, destination batching",
			destination: map[string]string{"sdk.batch.size": "1000", "sdk.batch.delay": "100ms"}},
		{name: "v2 engine", flags: []string{"--preview.pipeline-arch-v2"}},
		{name: "v2 engine, source batching", flags: []string{"--preview.pipeline-arch-v2"},
			source: map[string]string{"sdk.batch.size": "1000", "sdk.batch.delay": "100ms"}},
		// Size-only batching never waits for a batch to fill: the default
		// engine's shutdown does not hang, and the v2 engine, which waits
		// for every ack of a batch before it reads more, does not stall.
		{name: "default engine, size-only destination batching",
			destination: map[string]string{"sdk.batch.size": "3000"}},
		{name: "v2 engine, size-only destination batching", flags: []string{"--preview.pipeline-arch-v2"},
			destination: map[string]string{"sdk.batch.size": "3000"}},
		{name: "v2 engine, size-only batching on both sides", flags: []string{"--preview.pipeline-arch-v2"},
			source: map[string]string{"sdk.batch.size": "3000"}, destination: map[string]string{"sdk.batch.size": "7000"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := startConduit(t, pipelineFile(records, tt.source, "log", merge(map[string]string{"level": "trace"}, tt.destination)), tt.flags...)
			c.waitForAcked(records)
			c.checkDelivered("e2e", "standalone:log", records)
			c.stop()
			c.checkProblems()
		})
	}
}

// TestConduitLargeRecords runs the v2 engine with every setting at its
// default and records of 8 KiB and 1 MiB: a source's batch of a thousand
// of them is far more than Conduit's 4 MiB message limit, so it must travel
// in messages that fit.
func TestConduitLargeRecords(t *testing.T) {
	for _, tt := range []struct {
		name    string
		size    int
		records int
	}{{"8 KiB", 8 << 10, 5000}, {"1 MiB", 1 << 20, 60}} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			payload := filepath.Join(t.TempDir(), "payload")
			is.NoErr(os.WriteFile(payload, []byte(strings.Repeat("x", tt.size)), 0o644))
			pipeline := pipelineYAML("standalone:generator", map[string]string{
				"format.type": "file", "format.options.path": payload, "recordCount": fmt.Sprint(tt.records),
			}, "standalone:log", map[string]string{"level": "trace"})
			c := startConduit(t, pipeline, "--preview.pipeline-arch-v2")
			c.waitForAcked(tt.records)
			is.Equal(c.executions("e2e"), float64(tt.records))
			c.checkRunning("e2e")
			c.stop()
			c.checkProblems()
		})
	}
}

// TestConduitPostgres runs standalone:generator → standalone:postgres in
// real Conduit and checks the rows in the table.
func TestConduitPostgres(t *testing.T) {
	const records = 10000
	url := database(t)
	pipeline := pipelineFile(records, nil, "postgres", map[string]string{
		"url": url, "table": "generated", "key": "seq", "sdk.batch.size": "1000", "sdk.batch.delay": "50ms",
	})
	is := is.New(t)
	c := startConduit(t, pipeline)
	c.waitForAcked(records)
	is.Equal(count(t, url, `SELECT count(*) FROM generated`), int64(records))
	c.stop()
	c.checkProblems()
}
