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

	"github.com/connkit/connkit/sdk/config"
	"github.com/matryer/is"
	"gopkg.in/yaml.v3"
)

// specYAML is a connector.yaml: the identity and each role's parameters,
// in order (package config holds its format to the incumbent's).
type specYAML struct {
	Version       string
	Specification struct {
		Name, Summary, Description, Version, Author string
		Source, Destination                         struct{ Parameters []yamlParameter }
	}
}

type yamlParameter struct {
	Name, Description, Type, Default string
	Validations                      []struct{ Type, Value string }
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
	var want specYAML
	is.NoErr(yaml.Unmarshal(incumbentFileYAML(t), &want))
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
	var got specYAML
	is.NoErr(yaml.Unmarshal(out.Bytes(), &got))
	is.Equal(got.Version, want.Version)
	gs := got.Specification
	is.Equal([]string{gs.Name, gs.Summary, gs.Description, gs.Version, gs.Author}, []string{ws.Name, ws.Summary, ws.Description, ws.Version, ws.Author})
	for _, role := range []struct {
		name      string
		got, want []yamlParameter
		spec      []config.Parameter
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
