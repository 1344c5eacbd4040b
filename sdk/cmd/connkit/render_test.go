package main

import (
	"context"
	"go/format"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/config"
)

// Each role gets its files, the Go files formatted; the others are the
// same for every role.
func TestRender(t *testing.T) {
	common := []string{".ci/run", ".github/workflows/release.yml", ".github/workflows/test.yml", ".gitignore", "Makefile", "README.md", "cmd/lines/main.go", "connector.go", "go.mod", "lines_test.go", "pipelines/lines.yaml"}
	for _, tt := range []struct {
		name                string
		source, destination bool
		files               []string
		plugins             []string // in the pipeline
		metrics             []string // the pipeline's commented sdk.metrics.address values, one a connector of the module
	}{
		{"both", true, true, []string{"destination.go", "source.go"}, []string{"standalone:lines@v0.1.0", "standalone:lines@v0.1.0"}, []string{"127.0.0.1:9464", "127.0.0.1:9465"}},
		{"source", true, false, []string{"source.go"}, []string{"standalone:lines@v0.1.0", "builtin:log"}, []string{"127.0.0.1:9464"}},
		{"destination", false, true, []string{"destination.go"}, []string{"builtin:generator", "standalone:lines@v0.1.0"}, []string{"127.0.0.1:9465"}},
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
			var plugins, metrics []string
			for line := range strings.Lines(pipeline) {
				if p, ok := strings.CutPrefix(strings.TrimSpace(line), "plugin: "); ok {
					plugins = append(plugins, p)
				}
				if a, ok := strings.CutPrefix(strings.TrimSpace(line), "# sdk.metrics.address: "); ok {
					metrics = append(metrics, a)
				}
			}
			if !slices.Equal(plugins, tt.plugins) {
				t.Errorf("the pipeline's plugins are %q, want %q", plugins, tt.plugins)
			}
			if !slices.Equal(metrics, tt.metrics) {
				t.Errorf("the pipeline's commented metrics addresses are %q, want %q", metrics, tt.metrics)
			}
			for _, a := range metrics {
				if !strings.Contains(string(files["README.md"]), "http://"+a+"/metrics") {
					t.Errorf("the README does not say where %s serves metrics", a)
				}
			}
			if !strings.Contains(string(files["README.md"]), "```yaml\n"+pipeline+"```") {
				t.Errorf("the README does not show the pipeline file")
			}
		})
	}
}

// A file not named .tmpl is copied as it is: the workflows' ${{ }} are
// GitHub's expressions, not the template's.
func TestRenderCopiesOtherFilesAsTheyAre(t *testing.T) {
	files, err := render(options{Name: "lines", Module: "lines", Source: true, Destination: true, GoVersion: goVersion, ConnkitVersion: "v0.3.0"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".github/workflows/release.yml", ".github/workflows/test.yml"} {
		want, err := templates.ReadFile("template/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if string(files[name]) != string(want) {
			t.Errorf("%s is not the template's file as it is:\n%s", name, files[name])
		}
	}
	if !strings.Contains(string(files[".github/workflows/release.yml"]), "${{ github.ref_name }}") {
		t.Errorf("release.yml lost its GitHub expressions:\n%s", files[".github/workflows/release.yml"])
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

// TestReadmeNamesEverySDKGroup holds a new module's README to the sdk.*
// parameters the SDK adds to each role: under each role the module plays,
// it names every group of them (sdk.batch, sdk.metrics, …), and each name
// it gives is a parameter, or with .* the prefix of some. A group the SDK
// gains fails here until the template names it.
func TestReadmeNamesEverySDKGroup(t *testing.T) {
	spec, err := sdk.Connector{Name: "lines", Version: "v0.1.0", Source: sdk.NewSource(newNopSource), Destination: sdk.NewDestination(newNopDestination)}.Specification()
	if err != nil {
		t.Fatal(err)
	}
	roles := []struct {
		name   string
		params []config.Parameter
	}{{"source", spec.SourceParameters}, {"destination", spec.DestinationParameters}}
	for _, plays := range []struct{ source, destination bool }{{true, true}, {true, false}, {false, true}} {
		files, err := render(options{Name: "lines", Module: "lines", Source: plays.source, Destination: plays.destination, GoVersion: goVersion, ConnkitVersion: "v0.3.0"})
		if err != nil {
			t.Fatal(err)
		}
		readme := string(files["README.md"])
		for _, role := range roles {
			item, found := listItem(readme, "- its "+role.name+":")
			if want := role.name == "source" && plays.source || role.name == "destination" && plays.destination; found != want {
				t.Errorf("source %v, destination %v: the README lists sdk.* parameters of a %s: %v, want %v", plays.source, plays.destination, role.name, found, want)
			}
			if !found {
				continue
			}
			for _, g := range sdkGroups(role.params) {
				if !strings.Contains(item, "`"+g+".") {
					t.Errorf("the README's sdk.* parameters of a %s leave out %s.*:\n%s", role.name, g, item)
				}
			}
			for _, m := range sdkName.FindAllStringSubmatch(item, -1) {
				if !slices.ContainsFunc(role.params, func(p config.Parameter) bool {
					return p.Name == m[1] || m[2] != "" && strings.HasPrefix(p.Name, m[1]+".")
				}) {
					t.Errorf("the README names %s among a %s's parameters; it has none such", m[0], role.name)
				}
			}
		}
	}
}

// sdkName matches an sdk.* parameter's name, or with .* a group's, in
// backquotes.
var sdkName = regexp.MustCompile("`(sdk(?:\\.[A-Za-z]+)+)(\\.\\*)?`")

// sdkGroups returns the groups of the sdk.* parameters among params: the
// first two elements of their names, such as sdk.batch.
func sdkGroups(params []config.Parameter) []string {
	var groups []string
	for _, p := range params {
		if parts := strings.SplitN(p.Name, ".", 3); len(parts) == 3 && parts[0] == "sdk" {
			groups = append(groups, parts[0]+"."+parts[1])
		}
	}
	slices.Sort(groups)
	return slices.Compact(groups)
}

// listItem returns the item of a Markdown list in text that starts with
// prefix, up to the next item or blank line.
func listItem(text, prefix string) (string, bool) {
	_, rest, ok := strings.Cut(text, "\n"+prefix)
	if !ok {
		return "", false
	}
	item := prefix
	for line := range strings.Lines(rest) {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "- ") {
			break
		}
		item += " " + strings.TrimSpace(line)
	}
	return item, true
}

type nopConfig struct{}

type nopSource struct{}

func newNopSource(nopConfig) (nopSource, error)            { return nopSource{}, nil }
func (nopSource) Open(context.Context, sdk.Position) error { return nil }
func (nopSource) Read(context.Context) (sdk.Record, error) { return sdk.Record{}, nil }
func (nopSource) Teardown(context.Context) error           { return nil }

type nopDestination struct{}

func newNopDestination(nopConfig) (nopDestination, error)               { return nopDestination{}, nil }
func (nopDestination) Open(context.Context) error                       { return nil }
func (nopDestination) Write(context.Context, []sdk.Record) (int, error) { return 0, nil }
func (nopDestination) Teardown(context.Context) error                   { return nil }

// The README says how to publish a release, with the names connkit
// release and the registry give the files, and, for a module that
// requires a local checkout, that the workflows need a published connkit.
func TestReadmeSaysHowToRelease(t *testing.T) {
	plan := releasePlan{name: "lines", version: "v0.1.0"}
	for _, connkitDir := range []string{"", "/src/connkit"} {
		files, err := render(options{Name: "lines", Module: "lines", Source: true, Destination: true, GoVersion: goVersion, ConnkitVersion: develVersion, ConnkitDir: connkitDir})
		if err != nil {
			t.Fatal(err)
		}
		_, section, found := strings.Cut(string(files["README.md"]), "\n## Release it\n")
		if !found {
			t.Fatalf("the README has no section on releases:\n%s", files["README.md"])
		}
		for _, want := range []string{
			"git tag v0.1.0 && git push origin v0.1.0",
			"`.github/workflows/release.yml`",
			"`connkit release -version v0.1.0`",
			"`" + strings.Replace(plan.archiveName(platform{"linux", "amd64"}), "linux_amd64", "OS_ARCH", 1) + "`",
			"`checksums.txt`", "`index.json`", "`" + provenanceFile + "`", "`ARCHIVE.sigstore.json`",
			"`conduit-connector-lines_0.1.0`",
			"Conduit's registry index",
			"-repository https://github.com/OWNER/REPO",
		} {
			if !strings.Contains(section, want) {
				t.Errorf("the README's section on releases does not say %s:\n%s", want, section)
			}
		}
		if local := strings.Contains(section, "requires connkit from a local checkout"); local != (connkitDir != "") {
			t.Errorf("with -connkit %q, the README says the module requires a local checkout: %v", connkitDir, local)
		}
	}
}
