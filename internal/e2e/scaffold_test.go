package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
// It logs how long each step took. The checkout is only read.
func TestScaffold(t *testing.T) {
	conduitPath := conduitBin(t)
	is := is.New(t)
	root, err := filepath.Abs("../..")
	is.NoErr(err)
	dir := filepath.Join(t.TempDir(), "lines")
	// GOWORK=off: the module is not part of a workspace; no GOFLAGS=-mod=mod:
	// go.mod and go.sum must be complete as generated.
	env := append(os.Environ(), "GOWORK=off", "GONOSUMDB=github.com/conduitio,buf.build")
	step := func(what string, dir, name string, args ...string) time.Duration {
		t.Helper()
		start := time.Now()
		cmd := exec.CommandContext(t.Context(), name, args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %s (in %s): %v\n%s", what, strings.Join(cmd.Args, " "), dir, err, out)
		}
		return time.Since(start)
	}
	newTime := step("connkit new", root, "go", "run", "./sdk/cmd/connkit", "new", "lines", "-dir", dir)
	testTime := step("the generated CI script", dir, "./.ci/run")
	buildTime := step("make build", dir, "make", "build")

	checkParametersTable(t, dir, filepath.Join(dir, "bin", "lines"), env)
	checkRunUsesConduitFromMakeConduit(t, dir, env)

	const lines = 1000
	var input strings.Builder
	for i := range lines {
		fmt.Fprintf(&input, "line %d\n", i+1)
	}
	is.NoErr(os.WriteFile(filepath.Join(dir, "input.txt"), []byte(input.String()), 0o644))
	start := time.Now()
	c := startServer(t, conduitpkg.Options{Bin: conduitPath, Dir: dir, Plugins: []string{filepath.Join(dir, "bin", "lines")}})
	c.waitForPipelineAcked("lines", lines)
	pipelineTime := time.Since(start)
	t.Logf("connkit new %v, CI script (make test) %v, make build %v, Conduit start to %d records acknowledged %v: %v in all",
		newTime.Round(time.Millisecond), testTime.Round(time.Millisecond), buildTime.Round(time.Millisecond), lines,
		pipelineTime.Round(time.Millisecond), (newTime + testTime + buildTime + pipelineTime).Round(time.Millisecond))

	f, err := os.Open(filepath.Join(dir, "output.jsonl"))
	is.NoErr(err)
	defer f.Close()
	got := bufio.NewScanner(f)
	n := 0
	for ; got.Scan(); n++ {
		var r sdk.Record
		if err := json.Unmarshal(got.Bytes(), &r); err != nil {
			t.Fatalf("line %d of output.jsonl is not an OpenCDC record: %v\n%s", n+1, err, got.Bytes())
		}
		if want := fmt.Sprintf("line %d", n+1); r.Payload.After == nil || string(r.Payload.After.Bytes()) != want || r.Operation != sdk.OperationCreate {
			t.Fatalf("line %d of output.jsonl is %s, want a create of %q", n+1, got.Bytes(), want)
		}
	}
	is.NoErr(got.Err())
	is.Equal(n, lines) // every line once, no more
	c.checkRunning("lines")
	c.stop()
	c.checkProblems()
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
