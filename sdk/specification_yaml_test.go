package sdk

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
	"gopkg.in/yaml.v3"
)

// connectorYAML is the structure of the incumbent's connector.yaml (its
// specgen's model v1), which Conduit's tooling reads.
type connectorYAML struct {
	Version       string `yaml:"version"`
	Specification struct {
		Name        string `yaml:"name"`
		Summary     string `yaml:"summary"`
		Description string `yaml:"description"`
		Version     string `yaml:"version"`
		Author      string `yaml:"author"`
		Source      struct {
			Parameters []yamlParameter `yaml:"parameters"`
		} `yaml:"source"`
		Destination struct {
			Parameters []yamlParameter `yaml:"parameters"`
		} `yaml:"destination"`
	} `yaml:"specification"`
}

type yamlParameter struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Type        string `yaml:"type"`
	Default     string `yaml:"default"`
	Validations []struct {
		Type  string `yaml:"type"`
		Value string `yaml:"value"`
	} `yaml:"validations"`
}

// decodeConnectorYAML decodes a connector.yaml strictly: a key the
// incumbent's model lacks fails, and so does one of its keys missing from
// a parameter.
func decodeConnectorYAML(t *testing.T, data []byte) connectorYAML {
	t.Helper()
	var spec connectorYAML
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&spec); err != nil {
		t.Fatalf("connector.yaml does not decode as the incumbent's: %v\n%s", err, data)
	}
	var raw struct {
		Specification map[string]map[string][]map[string]any `yaml:"specification"`
	}
	_ = yaml.Unmarshal(data, &raw) // the identity fields do not fit; the roles do
	for role, params := range raw.Specification {
		for _, p := range params["parameters"] {
			for _, key := range []string{"name", "description", "type", "default", "validations"} {
				if _, ok := p[key]; !ok {
					t.Errorf("%s parameter %v has no %q", role, p["name"], key)
				}
			}
		}
	}
	return spec
}

// incumbentFileYAML returns the connector.yaml the incumbent's specgen
// generated for conduit-connector-file v0.10.3, a source and destination
// with one required string parameter.
func incumbentFileYAML(t *testing.T) []byte {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "github.com/conduitio/conduit-connector-file@v0.10.3")
	cmd.Env = append(os.Environ(), "GONOSUMDB=github.com/conduitio") // not in the checksum database
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download of the incumbent's file connector: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(mod.Dir, "connector.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

type fileConfig struct {
	Path string `param:"path" validate:"required" desc:"Path is the file path used by the connector to read/write records."`
}

// TestSpecYAMLReadsAsTheIncumbents holds the YAML of a connector with the
// parameters of the incumbent's file connector to the file the incumbent
// generated for it.
func TestSpecYAMLReadsAsTheIncumbents(t *testing.T) {
	is := is.New(t)
	want := decodeConnectorYAML(t, incumbentFileYAML(t))
	ws := want.Specification
	c := Connector{
		Name: ws.Name, Summary: ws.Summary, Description: ws.Description, Version: ws.Version, Author: ws.Author,
		Source:      NewSource(func(fileConfig) (nopSource, error) { return nopSource{}, nil }),
		Destination: NewDestination(func(fileConfig) (nopDestination, error) { return nopDestination{}, nil }),
	}
	spec, err := c.Specification()
	is.NoErr(err)
	var out bytes.Buffer
	is.NoErr(serve(c, []string{"spec", "-format", "yaml"}, func(string) string { return "" }, &out, &out))
	got := decodeConnectorYAML(t, out.Bytes())
	is.Equal(got.Version, want.Version)
	gs := got.Specification
	is.Equal([]string{gs.Name, gs.Summary, gs.Description, gs.Version, gs.Author}, []string{ws.Name, ws.Summary, ws.Description, ws.Version, ws.Author})
	for _, role := range []struct {
		name      string
		got, want []yamlParameter
		spec      []Parameter
	}{
		{"source", gs.Source.Parameters, ws.Source.Parameters, spec.SourceParameters},
		{"destination", gs.Destination.Parameters, ws.Destination.Parameters, spec.DestinationParameters},
	} {
		is.Equal(len(role.got), len(role.spec))               // every parameter
		is.Equal(role.got[0], role.want[0])                   // path, required, as the incumbent writes it
		is.True(!strings.HasPrefix(role.got[0].Name, "sdk.")) // the connector's own first
		var names []string
		for _, p := range role.got[1:] {
			names = append(names, p.Name)
		}
		is.True(slices.IsSorted(names)) // then the sdk.* ones, by name
		for _, w := range role.want[1:] {
			i := slices.IndexFunc(role.got, func(p yamlParameter) bool { return p.Name == w.Name })
			if i < 0 {
				t.Errorf("%s: the incumbent's %s is missing", role.name, w.Name)
				continue
			}
			is.Equal(role.got[i].Type, w.Type) // the same type as the incumbent's
		}
	}
}

// TestSpecYAMLSaysWhatSpecifySays holds every parameter kind's YAML to the
// specification: types as on the wire, validations and defaults.
func TestSpecYAMLSaysWhatSpecifySays(t *testing.T) {
	is := is.New(t)
	type kinds struct {
		Mode  string   `param:"mode" default:"fast" validate:"inclusion=fast|safe" desc:"How: \"fast\" or\nsafe."`
		Count int      `param:"count" default:"3" validate:"gt=0,lt=10" desc:"How many."`
		Tags  []string `param:"tags" desc:"Tags: a, b."`
		Name  string   `param:"name" validate:"required,exclusion=root" desc:"Who."`
		Host  string   `param:"host" validate:"regex=^[a-z]+$" desc:"Where."`
		Ratio float64  `param:"ratio" default:"0.5" desc:"How much."`
	}
	c := Connector{Name: "kinds", Version: "v1.0.0", Destination: NewDestination(func(kinds) (nopDestination, error) { return nopDestination{}, nil })}
	spec, err := c.Specification()
	is.NoErr(err)
	got := decodeConnectorYAML(t, spec.YAML())
	byName := map[string]yamlParameter{}
	for _, p := range got.Specification.Destination.Parameters {
		byName[p.Name] = p
	}
	is.Equal(got.Specification.Destination.Parameters[0].Name, "name") // required first
	is.Equal(byName["mode"].Description, "How: \"fast\" or\nsafe.")
	is.Equal(byName["mode"].Validations[0].Type, "inclusion")
	is.Equal(byName["mode"].Validations[0].Value, "fast,safe")
	is.Equal(byName["count"].Type, "int")
	is.Equal(byName["count"].Default, "3")
	is.Equal([]string{byName["count"].Validations[0].Value, byName["count"].Validations[1].Value}, []string{"0", "10"})
	is.Equal(byName["tags"].Type, "string") // a list is a string on the wire
	is.Equal(byName["ratio"].Type, "float")
	var nameChecks []string
	for _, v := range byName["name"].Validations {
		nameChecks = append(nameChecks, v.Type+"="+v.Value)
	}
	is.Equal(nameChecks, []string{"required=", "exclusion=root"})
	is.Equal(byName["host"].Validations[0].Type, "regex")
	is.Equal(byName["host"].Validations[0].Value, "^(?:^[a-z]+$)$") // anchored, as Specify sends it
	is.Equal(len(got.Specification.Source.Parameters), 0)
}

func TestSpecFormats(t *testing.T) {
	is := is.New(t)
	c := Connector{Name: "kinds", Version: "v1.0.0",
		Source:      NewSource(func(fileConfig) (nopSource, error) { return nopSource{}, nil }),
		Destination: NewDestination(func(fileConfig) (nopDestination, error) { return nopDestination{}, nil })}
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := serve(c, append([]string{"spec"}, args...), func(string) string { return "" }, &out, &out)
		return out.String(), err
	}
	md, err := run("-format", "markdown")
	is.NoErr(err)
	is.Equal(md, "| parameter | role | type | default | description |\n|---|---|---|---|---|\n"+
		"| `path` | both | string | (required) | Path is the file path used by the connector to read/write records. |\n")
	js, err := run()
	is.NoErr(err)
	is.True(strings.HasPrefix(js, "{")) // JSON stays the default
	_, err = run("-format", "toml")
	is.Equal(err.Error(), `spec: -format "toml": want json, yaml or markdown`)
	_, err = run("yaml")
	is.Equal(err.Error(), "usage: spec [-format json|yaml|markdown]")
}
