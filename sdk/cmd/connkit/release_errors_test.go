package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -version is the tag's version, vMAJOR.MINOR.PATCH, which the release
// workflow runs for and the registry's identity pattern admits.
func TestReleaseVersionMustBeVMajorMinorPatch(t *testing.T) {
	for _, v := range []string{"", "0.1.0", "v0.1", "v0.1.0.1", "v01.0.0", "v0.1.0-rc.1", "v0.1.0+build", "V0.1.0", "v0.1.x"} {
		_, err := parseReleaseOptions([]string{"-version", v}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), `-version "`+v+`": expected a semantic version with a leading v, vMAJOR.MINOR.PATCH`) {
			t.Errorf("-version %q: %v, want an error naming -version and what it takes", v, err)
		}
	}
	for _, v := range []string{"v0.1.0", "v1.20.300"} {
		if _, err := parseReleaseOptions([]string{"-version", v}, io.Discard); err != nil {
			t.Errorf("-version %q: %v", v, err)
		}
	}
	if _, err := parseReleaseOptions([]string{"-version", "v0.1.0", "lines"}, io.Discard); err == nil || !strings.Contains(err.Error(), "flags only") {
		t.Errorf("an argument after the flags: %v, want an error", err)
	}
}

// The repository is the module path's, github.com/OWNER/REPO, unless
// -repository names it; any other module path needs -repository.
func TestReleaseRepository(t *testing.T) {
	for _, tt := range []struct{ flag, module, want string }{
		{"", "github.com/you/conduit-connector-lines", "https://github.com/you/conduit-connector-lines"},
		{"", "github.com/you/conduit-connector-lines/v2", "https://github.com/you/conduit-connector-lines"},
		{"", "github.com/you/connectors/lines", "https://github.com/you/connectors"},
		{"https://github.com/someone/lines", "example.com/lines", "https://github.com/someone/lines"},
		{"https://github.com/someone/lines", "github.com/you/conduit-connector-lines", "https://github.com/someone/lines"},
	} {
		r, err := releaseRepository(tt.flag, tt.module)
		if err != nil || r.url() != tt.want {
			t.Errorf("-repository %q, module %s: %s (%v), want %s", tt.flag, tt.module, r.url(), err, tt.want)
		}
	}
	for _, module := range []string{"lines", "example.com/you/lines", "gitlab.com/you/lines", "github.com/you"} {
		_, err := releaseRepository("", module)
		if err == nil || !strings.Contains(err.Error(), "the module "+module+" is not at github.com/OWNER/REPO") || !strings.Contains(err.Error(), "pass -repository https://github.com/OWNER/REPO") {
			t.Errorf("module %s without -repository: %v, want an error asking for -repository", module, err)
		}
	}
	for _, flag := range []string{"github.com/you/lines", "http://github.com/you/lines", "https://github.com/you/lines/", "https://github.com/you", "https://gitlab.com/you/lines", "https://github.com/you/lines.git/x", "https://github.com/you/.."} {
		_, err := parseReleaseOptions([]string{"-version", "v0.1.0", "-repository", flag}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), `-repository "`+flag+`": expected a GitHub repository's address, https://github.com/OWNER/REPO`) {
			t.Errorf("-repository %q: %v, want an error naming it", flag, err)
		}
	}
}

// A module outside GitHub releases with -repository, and fails without,
// saying so before it builds anything.
func TestReleaseOutsideGitHubNeedsRepository(t *testing.T) {
	t.Parallel()
	dir := scaffold(t, "example.com/lines")
	_, _, err := releaseIn(dir, hostOnly, "-version", "v0.2.0")
	if err == nil || !strings.Contains(err.Error(), "pass -repository https://github.com/OWNER/REPO") {
		t.Fatalf("connkit release of example.com/lines: %v, want an error asking for -repository", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "dist")); !os.IsNotExist(err) {
		t.Errorf("the failed release left dist/: %v", err)
	}
	stdout, stderr, err := releaseIn(dir, hostOnly, "-version", "v0.2.0", "-repository", "https://github.com/someone/lines", "-out", "out")
	if err != nil {
		t.Fatalf("connkit release -repository: %v\n%s", err, stderr)
	}
	// connkit new writes the Connector's Version as v0.1.0, from a
	// variable that the release sets to its own.
	if strings.Contains(stderr, "warning") {
		t.Errorf("connkit release of v0.2.0 of a scaffolded connector warns:\n%s", stderr)
	}
	archive := fmt.Sprintf("lines_0.2.0_%s_%s.tar.gz", hostOnly[0].os, hostOnly[0].arch)
	if !strings.Contains(stdout, "wrote "+filepath.Join("out", archive)) {
		t.Errorf("connkit release -out out does not say it wrote out/%s:\n%s", archive, stdout)
	}
	b, err := os.ReadFile(filepath.Join(dir, "out", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var entry indexEntry
	if err := json.Unmarshal(b, &entry); err != nil {
		t.Fatal(err)
	}
	if entry.Repository != "https://github.com/someone/lines" || len(entry.Versions) != 1 || len(entry.Versions[0].Artifacts) != 1 ||
		entry.Versions[0].Artifacts[0].URL != "https://github.com/someone/lines/releases/download/v0.2.0/"+archive {
		t.Errorf("index.json of a release with -repository:\n%s", b)
	}
}

// Without -cmd the release takes the only directory in cmd/; with none,
// or several, it says which -cmd it needs. -cmd must be a command.
func TestReleaseFindsTheCommand(t *testing.T) {
	t.Parallel()
	// module writes a module github.com/you/lines of files, each a Go
	// file of the package its directory names (lines at the root, main in
	// main.go), into a temporary directory; with no files, no module.
	module := func(t *testing.T, files ...string) string {
		dir := t.TempDir()
		if len(files) == 0 {
			return dir
		}
		for _, f := range append(files, "go.mod") {
			content := "package " + filepath.Base(filepath.Dir(f)) + "\n"
			switch {
			case f == "go.mod":
				content = "module github.com/you/lines\n\ngo 1.26.0\n"
			case filepath.Base(f) == "main.go":
				content = "package main\n\nfunc main() {}\n"
			case filepath.Dir(f) == ".":
				content = "package lines\n"
			}
			path := filepath.Join(dir, f)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tt := range []struct {
		name  string
		files []string
		args  []string
		want  string
	}{
		{"no command", []string{"lines.go"}, nil, "has no directory in cmd/ to release; name the connector's command with -cmd ./cmd/NAME"},
		{"two commands", []string{"cmd/b/main.go", "cmd/a/main.go"}, nil, "has several commands (./cmd/a, ./cmd/b); name the connector's with -cmd"},
		{"a library", []string{"cmd/lines/main.go", "lib/lib.go"}, []string{"-cmd", "./lib"}, "-cmd ./lib: is the package lib, expected a command (package main)"},
		{"a missing package", []string{"cmd/lines/main.go"}, []string{"-cmd", "./cmd/other"}, "-cmd ./cmd/other: go list"},
		{"no module", nil, nil, "connkit release runs in a connector's Go module"},
		{"the module's root", []string{"main.go"}, []string{"-cmd", "."}, "-cmd .: the release is named after the command's directory"},
		// The command is found; the module is no connector.
		{"a directory without ./", []string{"cmd/lines/main.go"}, []string{"-cmd", "cmd/lines"}, "the module does not build with github.com/conduitio/conduit-connector-protocol, Conduit's plugin protocol: is it a connector?"},
		{"the only command", []string{"cmd/lines/main.go", "lines.go"}, nil, "the module does not build with github.com/conduitio/conduit-connector-protocol"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := module(t, tt.files...)
			_, _, err := releaseIn(dir, hostOnly, append([]string{"-version", "v0.1.0"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("connkit release: %v, want %q", err, tt.want)
			}
		})
	}
}

// -platforms names some of the six, and nothing else.
func TestReleasePlatforms(t *testing.T) {
	got, err := parsePlatforms("linux/arm64, darwin/amd64,linux/arm64")
	if err != nil || platformList(got) != "linux/arm64,darwin/amd64" {
		t.Errorf("-platforms linux/arm64, darwin/amd64,linux/arm64: %v, %v", got, err)
	}
	for _, list := range []string{"", "linux", "plan9/amd64", "linux/amd64,"} {
		if _, err := parsePlatforms(list); err == nil || !strings.Contains(err.Error(), "-platforms") {
			t.Errorf("-platforms %q: %v, want an error naming -platforms", list, err)
		}
	}
	if opts, err := parseReleaseOptions([]string{"-version", "v1.0.0"}, io.Discard); err != nil || len(opts.platforms) != 6 {
		t.Errorf("without -platforms: %v, %v, want the six", opts.platforms, err)
	}
}
