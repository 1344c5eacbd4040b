package e2e

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestPipelineCommand runs the command behind `make pipeline` end to end
// in real Conduit, once to the end, with the destination's metrics served,
// and once interrupted as by a Ctrl-C, and checks what it reports and that
// it leaves nothing behind.
func TestPipelineCommand(t *testing.T) {
	conduitBin := conduitBin(t)
	bin := buildCommand(t, "pipeline")
	// start runs the command with its temporary directories in a folder
	// of their own. It returns the command, a channel of its output lines,
	// closed at its end, and a function, for after it exited, that returns
	// what it left behind: files in that folder and processes (PostgreSQL,
	// Conduit, the plugin) still running from there.
	start := func(t *testing.T, args ...string) (*exec.Cmd, <-chan string, func() []string) {
		t.Helper()
		tmp, err := os.MkdirTemp("", "connkit-pipeline-test-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(tmp) })
		// As root, PostgreSQL's postgres user must reach its data below.
		if err := os.Chmod(tmp, 0o755); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		t.Cleanup(cancel)
		cmd := exec.CommandContext(ctx, bin, append([]string{"-conduit", conduitBin, "-plugin", binary("connkit-postgres")}, args...)...)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 100)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		leftovers := func() []string {
			entries, _ := os.ReadDir(tmp)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			names = append(names, processesNaming(tmp)...)
			if stderr.Len() > 0 {
				t.Logf("stderr:\n%s", stderr.String())
			}
			return names
		}
		return cmd, lines, leftovers
	}

	t.Run("to the end", func(t *testing.T) {
		is := is.New(t)
		address := freeAddress(t)
		cmd, lines, leftovers := start(t, "-records", "500", "-show", "3", "-metrics", address)
		var out []string
		for l := range lines {
			out = append(out, l)
		}
		err := cmd.Wait()
		text := strings.Join(out, "\n")
		if err != nil {
			t.Fatalf("pipeline: %v\n%s", err, text)
		}
		t.Logf("output:\n%s", text)
		is.True(strings.Contains(text, "500 records acked by Conduit; 500 rows arrived in table generated"))
		is.True(regexp.MustCompile(`(?m)^rows/s: +\d+ \(500 rows in [\d.]+m?s, `).MatchString(text))
		is.True(regexp.MustCompile(`(?m)^mean latency: [\d.]+ ms \(Conduit's conduit_pipeline_execution_duration_seconds: sum [\d.]+s / count 500\)`).MatchString(text))
		is.Equal(len(regexp.MustCompile(`(?m)^\d+  +\S+  +\d{4}-\d\d-\d\dT`).FindAllString(text, -1)), 3) // the rows shown
		// where to scrape the destination's metrics, and what they said
		is.True(strings.Contains(text, "curl -s http://"+address+"/metrics"))
		is.True(regexp.MustCompile(`(?m)^the destination's metrics at http://` + regexp.QuoteMeta(address) + `/metrics: 500 records in, 500 acked, in \d+ batches`).MatchString(text))
		is.True(strings.HasSuffix(text, "Conduit and PostgreSQL stopped, temporary files removed."))
		is.Equal(leftovers(), []string(nil))
	})

	t.Run("interrupted", func(t *testing.T) {
		is := is.New(t)
		cmd, lines, leftovers := start(t, "-records", "100000000")
		var out []string
		for l := range lines {
			out = append(out, l)
			if strings.HasPrefix(l, "pipeline generator-to-postgres running") {
				is.NoErr(cmd.Process.Signal(syscall.SIGINT))
			}
		}
		err := cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 130 {
			t.Fatalf("pipeline: %v, want exit status 130\n%s", err, strings.Join(out, "\n"))
		}
		is.Equal(leftovers(), []string(nil)) // PostgreSQL's and Conduit's directories are gone
	})
}

// processesNaming returns the command lines of the running processes that
// name path (Linux only; elsewhere none).
func processesNaming(path string) []string {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), path) {
			out = append(out, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// TestDevpipelineRecords runs the command behind make devpipeline with a
// generator that makes records without end, and -records 3: three records
// are read, logged by the log destination and acked, however many the
// generator sent ahead.
func TestDevpipelineRecords(t *testing.T) {
	is := is.New(t)
	bin := buildCommand(t, "devpipeline")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-source", binary("connkit-generator"), "-source-config", "format.type=structured",
		"-source-config", "format.options.id=int", "-destination", binary("connkit-log"), "-records", "3").CombinedOutput()
	if err != nil {
		t.Fatalf("devpipeline: %v\n%s", err, out)
	}
	t.Logf("output:\n%s", out)
	is.True(regexp.MustCompile(`(?m)^3 records read in \d+ source messages, 3 acked in `).Match(out))
	is.Equal(len(regexp.MustCompile(`(?m)\brecord: record=`).FindAll(out, -1)), 3) // the log destination's, a line a record
}
