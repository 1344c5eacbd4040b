package main

import (
	"go/format"
	"maps"
	"slices"
	"strings"
	"testing"
)

// Each role gets its files, the Go files formatted; the others are the
// same for every role.
func TestRender(t *testing.T) {
	common := []string{".ci/run", ".gitignore", "Makefile", "README.md", "cmd/lines/main.go", "connector.go", "go.mod", "lines_test.go", "pipelines/lines.yaml"}
	for _, tt := range []struct {
		name                string
		source, destination bool
		files               []string
		plugins             []string // in the pipeline
	}{
		{"both", true, true, []string{"destination.go", "source.go"}, []string{"standalone:lines@v0.1.0", "standalone:lines@v0.1.0"}},
		{"source", true, false, []string{"source.go"}, []string{"standalone:lines@v0.1.0", "builtin:log"}},
		{"destination", false, true, []string{"destination.go"}, []string{"builtin:generator", "standalone:lines@v0.1.0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := options{Name: "lines", Module: "example.com/you/conduit-connector-lines", Source: tt.source, Destination: tt.destination,
				GoVersion: goVersion, ConnkitVersion: develVersion, ConnkitDir: "/src/connkit"}
			files, err := render(opts)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Sorted(slices.Values(append(tt.files, common...)))
			if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, want) {
				t.Fatalf("files %q, want %q", got, want)
			}
			for name, content := range files {
				if strings.HasSuffix(name, ".go") {
					if formatted, err := format.Source(content); err != nil || string(formatted) != string(content) {
						t.Errorf("%s is not gofmt'd (%v):\n%s", name, err, content)
					}
				}
				if strings.Contains(string(content), "<no value>") {
					t.Errorf("%s uses a value the template data lacks:\n%s", name, content)
				}
			}
			gomod := string(files["go.mod"])
			for _, line := range []string{"module example.com/you/conduit-connector-lines\n", "go " + goVersion + "\n", "require github.com/connkit/connkit " + develVersion + "\n", "replace github.com/connkit/connkit => /src/connkit"} {
				if !strings.Contains(gomod, line) {
					t.Errorf("go.mod lacks %q:\n%s", line, gomod)
				}
			}
			if main := string(files["cmd/lines/main.go"]); !strings.Contains(main, `lines "example.com/you/conduit-connector-lines"`) {
				t.Errorf("cmd/lines/main.go does not import the connector package:\n%s", main)
			}
			pipeline := string(files["pipelines/lines.yaml"])
			var plugins []string
			for line := range strings.Lines(pipeline) {
				if p, ok := strings.CutPrefix(strings.TrimSpace(line), "plugin: "); ok {
					plugins = append(plugins, p)
				}
			}
			if !slices.Equal(plugins, tt.plugins) {
				t.Errorf("the pipeline's plugins are %q, want %q", plugins, tt.plugins)
			}
			if !strings.Contains(string(files["README.md"]), "```yaml\n"+pipeline+"```") {
				t.Errorf("the README does not show the pipeline file")
			}
		})
	}
}

// A released command requires its own version, without a replace directive.
func TestRenderReleased(t *testing.T) {
	files, err := render(options{Name: "lines", Module: "lines", Source: true, Destination: true, GoVersion: goVersion, ConnkitVersion: "v0.3.0"})
	if err != nil {
		t.Fatal(err)
	}
	if gomod := string(files["go.mod"]); !strings.HasSuffix(gomod, "require github.com/connkit/connkit v0.3.0\n") || strings.Contains(gomod, "replace") {
		t.Fatalf("go.mod:\n%s", gomod)
	}
}
