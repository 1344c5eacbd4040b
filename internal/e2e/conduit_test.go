package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// conduit is a Conduit server running in a temporary directory with
// connkit's plugins in its connectors directory.
type conduit struct {
	t       *testing.T
	cmd     *exec.Cmd
	httpURL string
	logPath string
	exited  chan error
}

// startConduit starts the server in CONDUIT_BIN with the given pipeline file
// and extra flags. It skips the test when CONDUIT_BIN is unset, unless CI is
// set, where a missing server is a failure.
func startConduit(t *testing.T, pipeline string, flags ...string) *conduit {
	t.Helper()
	return startConduitWith(t, pipeline, nil, flags...)
}

// startConduitWith is startConduit with more plugins in the connectors
// directory next to connkit's: plugins maps a file name there to the plugin
// binary it links to.
func startConduitWith(t *testing.T, pipeline string, plugins map[string]string, flags ...string) *conduit {
	t.Helper()
	bin := conduitBin(t)
	dir := t.TempDir()
	for _, sub := range []string{"connectors", "pipelines", "processors"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{}
	for _, name := range []string{"connkit-generator", "connkit-log", "connkit-postgres"} {
		links[name] = binary(name)
	}
	maps.Copy(links, plugins)
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, "connectors", name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "pipelines", "pipeline.yaml"), []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	return runConduit(t, bin, dir, flags...)
}

// conduitBin returns the server in CONDUIT_BIN. It skips the test when
// that is unset, unless CI is set, where a missing server is a failure.
func conduitBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("CONDUIT_BIN")
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CONDUIT_BIN is not set; `make test` builds Conduit and sets it")
		}
		t.Skip("CONDUIT_BIN is not set; `make test` builds Conduit and sets it")
	}
	return bin
}

// runConduit starts the server bin in dir, with the plugins in its
// connectors directory and the pipeline files in its pipelines directory,
// as a user would run it there, and an in-memory database on free ports.
func runConduit(t *testing.T, bin, dir string, flags ...string) *conduit {
	t.Helper()
	httpAddr, grpcAddr := freeAddr(t), freeAddr(t)
	c := &conduit{t: t, httpURL: "http://" + httpAddr, logPath: filepath.Join(dir, "conduit.log"), exited: make(chan error, 1)}
	logFile, err := os.Create(c.logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	args := append([]string{"run",
		"--config.path", filepath.Join(dir, "conduit.yaml"),
		"--connectors.path", filepath.Join(dir, "connectors"),
		"--processors.path", filepath.Join(dir, "processors"),
		"--pipelines.path", filepath.Join(dir, "pipelines"),
		"--db.type", "inmemory",
		"--api.http.address", httpAddr,
		"--api.grpc.address", grpcAddr,
		"--log.format", "json",
		"--pipelines.exit-on-degraded",
	}, flags...)
	c.cmd = exec.Command(bin, args...)
	c.cmd.Dir = dir
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
		if t.Failed() {
			t.Logf("Conduit's log:\n%s", c.log())
		}
	})
	return c
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (c *conduit) log() string {
	b, _ := os.ReadFile(c.logPath)
	return string(b)
}

// metric returns the value of the Prometheus sample whose name and labels
// start with series, or -1 if Conduit does not report it (yet).
func (c *conduit) metric(series string) float64 {
	resp, err := http.Get(c.httpURL + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), series); ok {
			fields := strings.Fields(rest)
			if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
				return v
			}
		}
	}
	return -1
}

// waitFor polls until cond holds, failing the test with what was last seen
// if Conduit exits or the deadline passes.
func (c *conduit) waitFor(what string, timeout time.Duration, cond func() (bool, string)) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		select {
		case err := <-c.exited:
			c.exited <- err
			c.t.Fatalf("Conduit exited (%v) while waiting for %s; last seen: %s", err, what, seen)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s; last seen: %s", what, seen)
		}
	}
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
	acked := fmt.Sprintf(`conduit_pipeline_execution_duration_seconds_count{pipeline_name=%q}`, id)
	c.waitFor(fmt.Sprintf("%d acked records", n), 3*time.Minute, func() (bool, string) {
		if status, errText := c.pipelineState(id); status == "STATUS_DEGRADED" {
			c.t.Fatalf("pipeline degraded: %s", errText)
		}
		got := c.metric(acked)
		return got >= float64(n), fmt.Sprintf("%s %v", acked, got)
	})
}

// pipelineState returns the status and error Conduit's API reports.
func (c *conduit) pipelineState(id string) (status, errText string) {
	resp, err := http.Get(c.httpURL + "/v1/pipelines/" + id)
	if err != nil {
		return "unreachable: " + err.Error(), ""
	}
	defer resp.Body.Close()
	var p struct {
		State struct{ Status, Error string }
	}
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &p); err != nil {
		return fmt.Sprintf("unparsable: %s", body), ""
	}
	return p.State.Status, p.State.Error
}

// stop interrupts Conduit, which stops its pipelines gracefully, and checks
// it exits cleanly.
func (c *conduit) stop() {
	c.t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil {
		c.t.Fatal(err)
	}
	select {
	case err := <-c.exited:
		c.exited <- err
		if err != nil {
			c.t.Fatalf("Conduit exited with %v", err)
		}
	case <-time.After(time.Minute):
		c.t.Fatal("Conduit did not exit within a minute of SIGINT")
	}
}

// problems returns Conduit's log lines at warn level and above, other than
// the ones that come with a fresh setup.
func (c *conduit) problems() []string {
	benign := regexp.MustCompile(`could not read processor plugin directory|Using in-memory store|conduit is stopping|"error":"graceful shutdown"`)
	var out []string
	for line := range strings.SplitSeq(c.log(), "\n") {
		var entry struct{ Level string }
		if json.Unmarshal([]byte(line), &entry) != nil {
			continue
		}
		if (entry.Level == "warn" || entry.Level == "error" || entry.Level == "fatal") && !benign.MatchString(line) {
			out = append(out, line)
		}
	}
	return out
}

// pipelineFile is a pipeline e2e from standalone:generator, making records
// of three structured fields, to a destination plugin, each with extra
// settings.
func pipelineFile(records int, source map[string]string, destination string, destSettings map[string]string) string {
	settings := func(m map[string]string) string {
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(&b, "          %s: %q\n", k, m[k])
		}
		return b.String()
	}
	return fmt.Sprintf(`version: "2.2"
pipelines:
  - id: e2e
    status: running
    connectors:
      - id: generator
        type: source
        plugin: standalone:generator
        settings:
          format.type: structured
          format.options.name: string
          format.options.n: int
          format.options.at: time
          recordCount: "%d"
%s      - id: destination
        type: destination
        plugin: standalone:%s
        settings:
%s`, records, settings(source), destination, settings(destSettings))
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
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c := startConduit(t, pipelineFile(records, tt.source, "log", merge(map[string]string{"level": "trace"}, tt.destination)), tt.flags...)
			c.waitForAcked(records)
			is.Equal(c.metric(`conduit_pipeline_execution_duration_seconds_count{pipeline_name="e2e"}`), float64(records)) // exactly: no record twice
			is.Equal(c.metric(`conduit_connector_bytes_count{pipeline_name="e2e",plugin="standalone:log",type="destination"}`), float64(records))
			status, errText := c.pipelineState("e2e")
			is.Equal(status, "STATUS_RUNNING")
			is.Equal(errText, "")
			c.stop()
			if p := c.problems(); len(p) > 0 {
				t.Errorf("Conduit logged problems:\n%s", strings.Join(p, "\n"))
			}
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
	if p := c.problems(); len(p) > 0 {
		t.Errorf("Conduit logged problems:\n%s", strings.Join(p, "\n"))
	}
}
