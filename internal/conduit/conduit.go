// Package conduit runs a real Conduit server, as its users run it: a
// binary with a connectors directory and a pipeline file, its HTTP API and
// Prometheus metrics on loopback ports the kernel picks, its log in a file. The
// end-to-end tests and the pipeline command share it.
package conduit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/connkit/connkit/internal/metrics/metricstest"
)

// Options says what to run. Conduit runs in Dir, laid out as a user's:
// plugins in connectors/, pipeline files in pipelines/, processors/, its
// log in conduit.log (conduit-2.log for a second run in Dir, and so on).
type Options struct {
	Bin      string   // the Conduit binary
	Dir      string   // Conduit's directory, empty or laid out already; the caller removes it
	Pipeline string   // a pipeline file to write into pipelines/, if not empty
	Plugins  []string // plugin binaries to link into connectors/
	Env      []string // extra environment, name=value, which the pipeline file can name as ${name}
	Flags    []string // extra flags for `conduit run`
}

// Server is a running Conduit.
type Server struct {
	URL     string // its HTTP API, http://127.0.0.1:port
	LogPath string // its log, JSON lines

	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{} // closed when the process has exited
	err     error         // its exit status, set before done is closed
}

// Start starts Conduit with an in-memory store, JSON logs, and
// --pipelines.exit-on-degraded, so that a failing pipeline ends it.
// Conduit runs in a process group of its own, so that a Ctrl-C in the
// terminal reaches the caller alone, which decides how to stop it (a second
// interrupt makes Conduit exit without stopping its pipelines).
func Start(opts Options) (*Server, error) {
	for _, sub := range []string{"connectors", "pipelines", "processors"} {
		if err := os.MkdirAll(filepath.Join(opts.Dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	for _, p := range opts.Plugins {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		if err := os.Symlink(abs, filepath.Join(opts.Dir, "connectors", filepath.Base(p))); err != nil {
			return nil, err
		}
	}
	if opts.Pipeline != "" {
		if err := os.WriteFile(filepath.Join(opts.Dir, "pipelines", "pipeline.yaml"), []byte(opts.Pipeline), 0o644); err != nil {
			return nil, err
		}
	}
	return start(opts)
}

// apiStarted is the line Conduit logs once its HTTP API listens, with the
// address it listens on.
const apiStarted = `"http API started"`

// start starts Conduit with its APIs on port 0, so that the kernel picks
// free ports as Conduit binds them and no other process can take them
// first, and returns once its HTTP API listens, at the address it logged.
func start(opts Options) (*Server, error) {
	logFile, err := newLog(opts.Dir)
	if err != nil {
		return nil, err
	}
	s := &Server{LogPath: logFile.Name(), logFile: logFile, done: make(chan struct{})}
	args := append([]string{"run",
		"--config.path", filepath.Join(opts.Dir, "conduit.yaml"),
		"--connectors.path", filepath.Join(opts.Dir, "connectors"),
		"--processors.path", filepath.Join(opts.Dir, "processors"),
		"--pipelines.path", filepath.Join(opts.Dir, "pipelines"),
		"--db.type", "inmemory",
		"--api.http.address", "127.0.0.1:0",
		"--api.grpc.address", "127.0.0.1:0",
		"--log.format", "json",
		"--pipelines.exit-on-degraded",
	}, opts.Flags...)
	s.cmd = exec.Command(opts.Bin, args...)
	s.cmd.Dir = opts.Dir
	s.cmd.Env = append(os.Environ(), opts.Env...)
	s.cmd.Stdout, s.cmd.Stderr = s.logFile, s.logFile
	// Its own process group, and killed if the caller dies first.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		s.logFile.Close()
		return nil, err
	}
	go func() {
		s.err = s.cmd.Wait()
		s.logFile.Close()
		close(s.done)
	}()
	addr, err := s.apiAddress()
	if err != nil {
		return nil, err
	}
	s.URL = "http://" + addr
	return s, nil
}

// newLog creates Conduit's log in dir: conduit.log, or conduit-2.log,
// conduit-3.log… when Conduit ran in dir before, so that every run's log
// is kept.
func newLog(dir string) (*os.File, error) {
	for n := 1; ; n++ {
		name := "conduit.log"
		if n > 1 {
			name = fmt.Sprintf("conduit-%d.log", n)
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, os.ErrExist) {
			return f, err
		}
	}
}

// apiAddress waits until Conduit logs that its HTTP API listens and
// returns the address it logged. It returns an error with Conduit's log if
// Conduit exits first.
func (s *Server) apiAddress() (string, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		for line := range strings.SplitSeq(s.Log(), "\n") {
			if !strings.Contains(line, apiStarted) {
				continue
			}
			var entry struct{ Address string }
			if err := json.Unmarshal([]byte(line), &entry); err != nil || entry.Address == "" {
				return "", fmt.Errorf("conduit: no address in the line that says its HTTP API started: %s", line)
			}
			return entry.Address, nil
		}
		select {
		case <-s.done:
			return "", fmt.Errorf("conduit: exited (%v) before its HTTP API started; its log %s:\n%s", s.err, s.LogPath, s.Log())
		case <-tick.C:
		}
	}
}

// Pid returns the process id of Conduit, the parent of its plugins.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Done is closed when Conduit has exited; [Server.Err] then says how.
func (s *Server) Done() <-chan struct{} { return s.done }

// Err returns Conduit's exit status once [Server.Done] is closed.
func (s *Server) Err() error {
	<-s.done
	return s.err
}

// Stop interrupts Conduit, which stops its pipelines gracefully, and waits
// up to timeout for it to exit; then it kills it. It returns an error if
// Conduit did not exit cleanly.
func (s *Server) Stop(timeout time.Duration) error {
	select {
	case <-s.done:
		return s.err
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		<-s.done
		return s.err
	}
	select {
	case <-s.done:
		return s.err
	case <-time.After(timeout):
		s.Kill()
		return fmt.Errorf("conduit: did not exit within %v of SIGINT; killed", timeout)
	}
}

// Kill kills Conduit, if it is still running, and waits for it to exit.
func (s *Server) Kill() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// Log returns Conduit's log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.LogPath)
	return string(b)
}

// benign are the warnings and errors that come with a fresh setup and a
// graceful stop.
var benign = regexp.MustCompile(`could not read processor plugin directory|Using in-memory store|conduit is stopping|"error":"graceful shutdown"`)

// stopping is the line Conduit logs when a graceful stop begins.
var stopping = regexp.MustCompile(`stopping \d+ pipelines gracefully`)

// teardownRace is what Conduit v0.14.0's v2 engine can log during a graceful
// stop, whatever the connector does: its worker's Stop tears the source down
// before it sets the flag that ends the read loop (lifecycle-poc/funnel,
// Worker.Stop), so a read that starts in between finds no plugin and fails
// the pipeline instead of ending it.
var teardownRace = regexp.MustCompile(`failed to read from source: plugin is not running`)

// Problems returns Conduit's log lines at warn level and above, other than
// the ones that come with a fresh setup and a graceful stop.
func (s *Server) Problems() []string {
	var out []string
	stopped := false
	for line := range strings.SplitSeq(s.Log(), "\n") {
		var entry struct{ Level string }
		if json.Unmarshal([]byte(line), &entry) != nil {
			continue
		}
		stopped = stopped || stopping.MatchString(line)
		if entry.Level != "warn" && entry.Level != "error" && entry.Level != "fatal" {
			continue
		}
		if benign.MatchString(line) || stopped && teardownRace.MatchString(line) {
			continue
		}
		out = append(out, line)
	}
	return out
}

// Metric returns the sum of the Prometheus samples on /metrics named name
// whose labels include labels (each name=value, in any order, so that a
// label a later Conduit adds changes nothing), or -1 if Conduit reports
// none (yet).
func (s *Server) Metric(name string, labels ...string) float64 {
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1
	}
	samples, err := metricstest.Parse(string(b))
	if err != nil {
		return -1
	}
	if sum, n := samples.Sum(name, labels...); n > 0 {
		return sum
	}
	return -1
}

// Latency returns the count and sum (in seconds) of Conduit's
// conduit_pipeline_execution_duration_seconds histogram for a pipeline:
// records from the source's read to the destination's ack (nacked ones
// included). Both are -1 while Conduit does not report them.
func (s *Server) Latency(pipeline string) (count, sum float64) {
	const name = "conduit_pipeline_execution_duration_seconds"
	return s.Metric(name+"_count", "pipeline_name="+pipeline), s.Metric(name+"_sum", "pipeline_name="+pipeline)
}

// PipelineState returns the status and error Conduit's API reports for a
// pipeline, such as STATUS_RUNNING or STATUS_DEGRADED.
func (s *Server) PipelineState(id string) (status, errText string) {
	resp, err := http.Get(s.URL + "/v1/pipelines/" + id)
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

// SourcePosition returns the position Conduit has stored for the source
// connector id, which it hands back to the source when the pipeline
// starts again: empty until it has stored one (it stores the positions
// acked about once a second).
func (s *Server) SourcePosition(id string) ([]byte, error) {
	resp, err := http.Get(s.URL + "/v1/connectors/" + id)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("conduit: connector %s: %s: %s", id, resp.Status, body)
	}
	var c struct {
		SourceState struct{ Position []byte } // base64 in JSON
	}
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("conduit: connector %s: %w in %s", id, err, body)
	}
	return c.SourceState.Position, nil
}

// ErrDegraded is returned by [Server.WaitAcked] when the pipeline fails;
// the error wrapping it carries Conduit's reason.
var ErrDegraded = errors.New("conduit: pipeline degraded")

// WaitAcked polls until Conduit reports n records through pipeline (acked
// or nacked, as its histogram counts them) and returns nil. It returns an
// error wrapping [ErrDegraded] if the pipeline degrades, and an error
// naming what it last saw if Conduit exits or ctx ends first.
func (s *Server) WaitAcked(ctx context.Context, pipeline string, n int) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		got, _ := s.Latency(pipeline)
		if got >= float64(n) {
			return nil
		}
		if status, errText := s.PipelineState(pipeline); status == "STATUS_DEGRADED" {
			return fmt.Errorf("%w: %s", ErrDegraded, errText)
		}
		select {
		case <-s.done:
			return fmt.Errorf("conduit: exited (%v) with %v of %d records through pipeline %s", s.err, max(got, 0), n, pipeline)
		case <-ctx.Done():
			return fmt.Errorf("conduit: %w with %v of %d records through pipeline %s", context.Cause(ctx), max(got, 0), n, pipeline)
		case <-tick.C:
		}
	}
}

// StopPipeline stops a pipeline gracefully, as a user does through
// Conduit's API (POST /v1/pipelines/{id}/stop), and leaves Conduit
// running: the source stops reading, and the records already read go
// through to the destination and are acknowledged. It returns once Conduit
// reports the pipeline stopped, and an error if Conduit refuses, reports
// it degraded, exits, or does neither within timeout.
func (s *Server) StopPipeline(id string, timeout time.Duration) error {
	resp, err := http.Post(s.URL+"/v1/pipelines/"+id+"/stop", "application/json", strings.NewReader(`{"force":false}`))
	if err != nil {
		return fmt.Errorf("conduit: stop pipeline %s: %w", id, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("conduit: stop pipeline %s: %s: %s", id, resp.Status, bytes.TrimSpace(body))
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		switch status, errText := s.PipelineState(id); status {
		case "STATUS_STOPPED":
			return nil
		case "STATUS_DEGRADED":
			return fmt.Errorf("%w while it stopped: %s", ErrDegraded, errText)
		}
		select {
		case <-s.done:
			return fmt.Errorf("conduit: exited (%v) while pipeline %s stopped", s.err, id)
		case <-deadline.C:
			status, _ := s.PipelineState(id)
			return fmt.Errorf("conduit: pipeline %s not stopped within %v: %s", id, timeout, status)
		case <-tick.C:
		}
	}
}
