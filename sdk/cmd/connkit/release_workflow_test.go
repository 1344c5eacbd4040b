package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// actionlint is the linter of GitHub workflows the tests run, from the Go
// module proxy.
const actionlint = "github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"

// renderWorkflows writes the workflows of a new module into a temporary
// directory and returns their paths, release.yml first.
func renderWorkflows(t *testing.T) []string {
	t.Helper()
	files, err := render(options{Name: "lines", Module: "github.com/you/conduit-connector-lines", Source: true, Destination: true, GoVersion: goVersion, ConnkitVersion: "v0.3.0"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var paths []string
	for _, name := range []string{".github/workflows/release.yml", ".github/workflows/test.yml"} {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	return paths
}

// runActionlint runs actionlint on the workflow files in paths and
// returns what it printed, and whether it found nothing wrong. Without
// shellcheck or pyflakes installed, it skips their checks of run:
// scripts; it checks the rest, apart from the inputs of remote reusable
// workflows, which it does not fetch.
func runActionlint(t *testing.T, paths ...string) (string, bool) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", append([]string{"run", actionlint, "-no-color"}, paths...)...)
	cmd.Dir = filepath.Dir(paths[0])
	out, err := cmd.CombinedOutput()
	// actionlint exits 1 for problems found, more for its own failures.
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) {
		t.Fatalf("go run %s: %v\n%s", actionlint, err, out)
	}
	return string(out), err == nil
}

// A new module's workflows pass actionlint, and actionlint fails a
// workflow that is broken.
func TestWorkflowsPassActionlint(t *testing.T) {
	t.Parallel()
	paths := renderWorkflows(t)
	if out, ok := runActionlint(t, paths...); !ok {
		t.Fatalf("actionlint finds problems in the new module's workflows:\n%s", out)
	}
	release, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, old, new, want string }{
		{"an output that is not there", "needs.build.outputs.hashes", "needs.build.outputs.hashs", `property "hashs" is not defined`},
		{"a job that is not there", "needs: build", "needs: bulid", `job "provenance" needs job "bulid" which does not exist`},
		{"a misspelt key", "runs-on:", "runs_on:", `unexpected key "runs_on"`},
	} {
		broken := filepath.Join(t.TempDir(), "release.yml")
		if err := os.WriteFile(broken, []byte(strings.Replace(string(release), tt.old, tt.new, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, ok := runActionlint(t, broken); ok || !strings.Contains(out, tt.want) {
			t.Errorf("%s: actionlint passes %v, says\n%s\nwant a failure saying %q", tt.name, ok, out, tt.want)
		}
	}
}

// workflow is what the tests read of a GitHub workflow.
type workflow struct {
	On          map[string]any    `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Jobs        map[string]struct {
		Needs       string            `yaml:"needs"`
		Permissions map[string]string `yaml:"permissions"`
		Uses        string            `yaml:"uses"`
		With        map[string]any    `yaml:"with"`
		Outputs     map[string]string `yaml:"outputs"`
		Steps       []struct {
			ID   string            `yaml:"id"`
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			Env  map[string]string `yaml:"env"`
			With map[string]any    `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// readWorkflow parses the workflow at path.
func readWorkflow(t *testing.T, path string) workflow {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(b, &w); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return w
}

// The release workflow is the signer the registry entry names
// (.github/workflows/release.yml, for a tag), publishes the files that
// the entry gives the addresses of, and has the SLSA generator write the
// provenance the entry names.
func TestReleaseWorkflowPublishesWhatTheEntryNames(t *testing.T) {
	paths := renderWorkflows(t)
	if !strings.HasSuffix(filepath.ToSlash(paths[0]), "/.github/workflows/release.yml") {
		t.Fatalf("the release workflow is at %s", paths[0])
	}
	w := readWorkflow(t, paths[0])
	if push, _ := w.On["push"].(map[string]any); push == nil || !slices.Equal(toStrings(push["tags"]), []string{"v*.*.*"}) {
		t.Errorf("the release workflow runs on %v, want a push of tags v*.*.*", w.On)
	}
	if w.Permissions["contents"] != "write" || w.Permissions["id-token"] != "write" {
		t.Errorf("the release workflow's permissions are %v, want contents and id-token: write", w.Permissions)
	}
	build := w.Jobs["build"]
	var script strings.Builder
	for _, s := range build.Steps {
		script.WriteString(s.Run + "\n")
	}
	for _, want := range []string{
		`go run github.com/connkit/connkit/sdk/cmd/connkit release -version "$VERSION"`,
		`cosign sign-blob --yes --bundle "$archive.sigstore.json" "$archive"`,
		`dist/*.tar.gz dist/*.sigstore.json dist/checksums.txt dist/index.json`,
		`echo "hashes=$(base64 -w0 dist/checksums.txt)" >> "$GITHUB_OUTPUT"`,
	} {
		if !strings.Contains(script.String(), want) {
			t.Errorf("the release job does not run %s:\n%s", want, script.String())
		}
	}
	if build.Outputs["hashes"] != "${{ steps.hashes.outputs.hashes }}" {
		t.Errorf("the build job's outputs are %v", build.Outputs)
	}
	p := w.Jobs["provenance"]
	if p.Needs != "build" || p.Uses != "slsa-framework/slsa-github-generator/.github/workflows/generator_generic_slsa3.yml@v2.1.0" ||
		p.With["base64-subjects"] != "${{ needs.build.outputs.hashes }}" || p.With["upload-assets"] != true || p.With["provenance-name"] != provenanceFile ||
		p.Permissions["actions"] != "read" || p.Permissions["id-token"] != "write" || p.Permissions["contents"] != "write" {
		t.Errorf("the provenance job is %+v", p)
	}
}

// The test workflow checks formatting, vets and runs the tests under
// -race, on every push and pull request, with the module's Go.
func TestTestWorkflowChecksAsMakeTestDoes(t *testing.T) {
	w := readWorkflow(t, renderWorkflows(t)[1])
	if _, ok := w.On["push"]; !ok {
		t.Errorf("the test workflow does not run on push: %v", w.On)
	}
	if _, ok := w.On["pull_request"]; !ok {
		t.Errorf("the test workflow does not run on pull requests: %v", w.On)
	}
	var script strings.Builder
	var setupGo bool
	var gofmtStep string
	for _, s := range w.Jobs["test"].Steps {
		script.WriteString(s.Run + "\n")
		setupGo = setupGo || strings.HasPrefix(s.Uses, "actions/setup-go@") && s.With["go-version-file"] == "go.mod"
		if strings.Contains(s.Run, "gofmt -l") {
			gofmtStep = s.Run
		}
	}
	for _, want := range []string{"gofmt -l .", "go vet ./...", "go test -race ./..."} {
		if !strings.Contains(script.String(), want) {
			t.Errorf("the test job does not run %s:\n%s", want, script.String())
		}
	}
	if !setupGo {
		t.Errorf("the test job does not set up Go from go.mod")
	}
	checkGofmtStep(t, gofmtStep)
}

// checkGofmtStep runs the script of the test workflow's gofmt step as
// GitHub's runners run it, in a module with a formatted file, which
// passes, and then an unformatted one, which fails, named.
func checkGofmtStep(t *testing.T, script string) {
	t.Helper()
	dir := t.TempDir()
	step := func() (string, error) {
		cmd := exec.CommandContext(t.Context(), "bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.go"), []byte("package lines\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := step(); err != nil {
		t.Errorf("the gofmt step fails on formatted files: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.go"), []byte("package lines\nfunc  f( ) {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := step(); err == nil || !strings.Contains(out, "bad.go") || strings.Contains(out, "ok.go") {
		t.Errorf("the gofmt step on an unformatted file: %v\n%s\nwant a failure naming bad.go alone", err, out)
	}
}

// toStrings returns the strings in v, a YAML list.
func toStrings(v any) []string {
	var s []string
	l, _ := v.([]any)
	for _, e := range l {
		str, _ := e.(string)
		s = append(s, str)
	}
	return s
}
