package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	conduitpkg "github.com/connkit/connkit/internal/conduit"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// TestScaffold follows the path of an author who starts a connector with
// `connkit new` as README shows it, run in this checkout: the command
// writes a module against the checkout (a replace directive), its CI
// script (make test: go vet and the conformance suite under -race) passes
// as generated, make build builds the plugin, whose specification is the
// README's table of parameters, make run would start Conduit from where
// make conduit builds it, and real Conduit runs the module's own pipeline
// file with it: the new source reads input.txt, the new destination
// appends every line, in order, to output.jsonl as an OpenCDC JSON record.
// Then make run, twice, as the module's README has it, and git add -A,
// which takes only the files connkit new wrote. It logs how long each step
// took. The checkout is only read.
func TestScaffold(t *testing.T) {
	conduitPath := conduitBin(t)
	is := is.New(t)
	env, step := authorSteps(t)
	dir, newTime := newLines(t, step)
	written := filesIn(t, dir)
	testTime := step("the generated CI script", dir, "./.ci/run")
	buildTime := step("make build", dir, "make", "build")

	checkParametersTable(t, dir, filepath.Join(dir, "bin", "lines"), env)
	checkRunUsesConduitFromMakeConduit(t, dir, env)

	// Conduit runs the module's pipeline file in a directory of its own,
	// which the harness lays out, so that the module's holds only what
	// make leaves.
	run := filepath.Join(t.TempDir(), "conduit")
	pipeline, err := os.ReadFile(filepath.Join(dir, "pipelines", "lines.yaml"))
	is.NoErr(err)
	is.NoErr(os.MkdirAll(run, 0o755))
	c, pipelineTime := pipeLines(t, conduitpkg.Options{Bin: conduitPath, Dir: run, Pipeline: string(pipeline), Plugins: []string{filepath.Join(dir, "bin", "lines")}})
	t.Logf("connkit new %v, CI script (make test) %v, make build %v, Conduit start to %d records acknowledged %v: %v in all",
		newTime.Round(time.Millisecond), testTime.Round(time.Millisecond), buildTime.Round(time.Millisecond), linesIn,
		pipelineTime.Round(time.Millisecond), (newTime + testTime + buildTime + pipelineTime).Round(time.Millisecond))
	c.checkRunning("lines")
	c.stop()
	c.checkProblems()

	checkMakeRunTwice(t, dir, env)
	// make connector.yaml wrote connector.yaml, for tools that read it
	// from the repository.
	checkGitAddsOnly(t, dir, append(written, "connector.yaml"))
	step("make clean", dir, "make", "clean")
	for _, name := range []string{"bin", "conduit.db", "output.jsonl", "processors"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("make clean left %s: %v", name, err)
		}
	}
}

// linesIn is how many lines pipeLines feeds a scaffolded connector.
const linesIn = 1000

// pipeLines runs the pipeline of a scaffolded connector, lines, in the
// Conduit o describes (o.Dir is its working directory), on an input.txt of
// linesIn numbered lines, and checks that output.jsonl holds every line
// once, in order, no more. It returns the Conduit, still running, and how
// long it took from its start to the last record acknowledged.
func pipeLines(t *testing.T, o conduitpkg.Options) (*conduit, time.Duration) {
	t.Helper()
	var input strings.Builder
	want := make([]string, linesIn)
	for i := range want {
		want[i] = fmt.Sprintf("line %d", i+1)
		fmt.Fprintln(&input, want[i])
	}
	if err := os.WriteFile(filepath.Join(o.Dir, "input.txt"), []byte(input.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c := startServer(t, o)
	c.waitForPipelineAcked("lines", linesIn)
	took := time.Since(start)
	if got := outputLines(t, filepath.Join(o.Dir, "output.jsonl")); !slices.Equal(got, want) {
		t.Fatalf("output.jsonl holds %d lines, not the %d numbered lines in order: %.200q", len(got), linesIn, got)
	}
	return c, took
}

// authorSteps returns the environment an author's commands run in, and
// step, which runs one as a step of t: in dir, failing t with its output
// if it fails, and returning how long it took. GOWORK=off: the module is
// not part of a workspace; no GOFLAGS=-mod=mod: go.mod and go.sum must be
// complete as generated.
func authorSteps(t *testing.T) (env []string, step func(what, dir, name string, args ...string) time.Duration) {
	env = append(os.Environ(), "GOWORK=off", "GONOSUMDB=github.com/conduitio,buf.build")
	return env, func(what, dir, name string, args ...string) time.Duration {
		t.Helper()
		start := time.Now()
		cmd := exec.CommandContext(t.Context(), name, args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %s (in %s): %v\n%s", what, strings.Join(cmd.Args, " "), dir, err, out)
		}
		return time.Since(start)
	}
}

// newLines runs connkit new lines in this checkout, with flags, as step
// of t, into a directory of t's, and returns that directory and how long
// it took.
func newLines(t *testing.T, step func(what, dir, name string, args ...string) time.Duration, flags ...string) (string, time.Duration) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "lines")
	args := append([]string{"run", "./sdk/cmd/connkit", "new", "lines", "-dir", dir}, flags...)
	return dir, step("connkit new", root, "go", args...)
}

// outputLines returns the lines the destination wrote into the file at
// path, each an OpenCDC record of a created line, or fails the test.
func outputLines(t *testing.T, path string) []string {
	t.Helper()
	var lines []string
	for i, r := range readJSONLines[sdk.Record](t, path) {
		if r.Payload.After == nil || r.Operation != sdk.OperationCreate {
			t.Fatalf("line %d of %s is a %s with payload.after %v, want a create with one", i+1, path, r.Operation, r.Payload.After)
		}
		lines = append(lines, string(r.Payload.After.Bytes()))
	}
	return lines
}

// checkMakeRunTwice runs the module's make run as its README says, twice:
// the first copies input.txt; the second, with a line added, only that
// line, since Conduit kept the position in conduit.db. Neither logs a
// plugin Conduit could not load: make leaves nothing else in bin/, the
// connectors directory.
func checkMakeRunTwice(t *testing.T, dir string, env []string) {
	t.Helper()
	input := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(input, []byte("hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := []string{makeRun(t, dir, env, 2)}
	f, err := os.OpenFile(input, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("again\n")
	if err := errors.Join(err, f.Close()); err != nil {
		t.Fatal(err)
	}
	logs = append(logs, makeRun(t, dir, env, 3))
	if got, want := outputLines(t, filepath.Join(dir, "output.jsonl")), []string{"hello", "world", "again"}; !slices.Equal(got, want) {
		t.Errorf("after two make runs output.jsonl holds %q, want %q", got, want)
	}
	for i, log := range logs {
		if strings.Contains(log, "could not load") {
			t.Errorf("make run %d logged a plugin Conduit could not load:\n%s", i+1, log)
		}
		// Conduit's own log of a Ctrl-C has errors; what comes before
		// must have no warning.
		running, _, _ := strings.Cut(log, "gracefully stopping")
		if regexp.MustCompile(`\b(WRN|ERR)\b`).MatchString(running) {
			t.Errorf("make run %d logged warnings or errors:\n%s", i+1, log)
		}
	}
}

// makeRun runs make run in dir, on free ports, until output.jsonl has n
// lines, interrupts it as Ctrl-C in a terminal does, and returns what it
// printed.
func makeRun(t *testing.T, dir string, env []string, n int) string {
	t.Helper()
	var out logBuffer
	cmd := exec.Command("make", "run", "HTTP_ADDRESS="+freeAddress(t), "GRPC_ADDRESS="+freeAddress(t))
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // make and Conduit, as a terminal's foreground job
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	group := -cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		select {
		case <-done:
		default: // the test failed: leave nothing running
			_ = syscall.Kill(group, syscall.SIGKILL)
			<-done
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for lineCount(filepath.Join(dir, "output.jsonl")) < n {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("make run exited (%v) before output.jsonl had %d lines:\n%s", err, n, out.String())
		case <-ctx.Done():
			t.Fatalf("output.jsonl did not get %d lines: %v\n%s", n, ctx.Err(), out.String())
		case <-tick.C:
		}
	}
	if err := syscall.Kill(group, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err
	case <-ctx.Done():
		t.Fatalf("make run did not stop when interrupted: %v\n%s", ctx.Err(), out.String())
	}
	return out.String()
}

// lineCount returns how many lines the file at path has; none if it is
// missing.
func lineCount(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

// filesIn returns the files below dir, by their slash-separated paths
// from it, sorted.
func filesIn(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// checkGitAddsOnly checks that git add -A in dir, a new repository, adds
// the files want and no others: the module's .gitignore leaves out what
// make and Conduit leave there.
func checkGitAddsOnly(t *testing.T, dir string, want []string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	out, err := exec.Command("git", "-C", dir, "status", "--porcelain").Output()
	if err != nil {
		t.Fatalf("git status: %v", err)
	}
	var added []string
	for line := range strings.Lines(string(out)) {
		added = append(added, strings.TrimSpace(line[2:]))
	}
	slices.Sort(added)
	if want = slices.Sorted(slices.Values(want)); !slices.Equal(added, want) {
		t.Errorf("git add -A after make build, test, readme and run adds\n%q\nwant the module's own files\n%q", added, want)
	}
}

// checkParametersTable checks that the README in dir has, between its
// markers, the table of parameters the plugin prints, and that the
// module's make readme rewrites it so: it breaks the table first.
func checkParametersTable(t *testing.T, dir, plugin string, env []string) {
	t.Helper()
	want, err := exec.CommandContext(t.Context(), plugin, "spec", "-format", "markdown").Output()
	if err != nil {
		t.Fatalf("%s spec -format markdown: %v", plugin, err)
	}
	table := func() string {
		t.Helper()
		readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
		if err != nil {
			t.Fatal(err)
		}
		_, table, _, ok := cutParameters(string(readme))
		if !ok {
			t.Fatalf("the README has no %q ... %q markers around its parameters", parametersBegin, parametersEnd)
		}
		return table
	}
	if got := table(); got != string(want) {
		t.Errorf("the README's parameters are\n%s\nthe plugin's specification says\n%s", got, want)
	}
	readme := filepath.Join(dir, "README.md")
	old, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(readme, []byte(strings.Replace(string(old), "| `path` |", "| `stale` |", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "make", "readme", "connector.yaml")
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make readme connector.yaml: %v\n%s", err, out)
	}
	if got := table(); got != string(want) {
		t.Errorf("make readme left the parameters as\n%s\nthe plugin's specification says\n%s", got, want)
	}
	yaml, err := os.ReadFile(filepath.Join(dir, "connector.yaml"))
	if err != nil || !strings.Contains(string(yaml), "specification:") {
		t.Errorf("make connector.yaml wrote no specification: %v\n%s", err, yaml)
	}
}

// checkRunUsesConduitFromMakeConduit checks that the module's make run
// starts Conduit from where connkit's make conduit builds it.
func checkRunUsesConduitFromMakeConduit(t *testing.T, dir string, env []string) {
	t.Helper()
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		cache = filepath.Join(os.Getenv("HOME"), ".cache")
	}
	cmd := exec.CommandContext(t.Context(), "make", "-n", "run")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n run: %v\n%s", err, out)
	}
	if want := filepath.Join(cache, "connkit", "conduit-v0.14.0") + " run --connectors.path ./bin --pipelines.path ./pipelines"; !strings.Contains(string(out), want) {
		t.Errorf("make run runs\n%s\nwant %s", out, want)
	}
}
