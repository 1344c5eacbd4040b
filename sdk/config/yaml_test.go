package config

import (
	"bytes"
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
	params, err := Parameters(kinds{})
	is.NoErr(err)
	spec := Specification{Name: "kinds", Version: "v1.0.0", DestinationParameters: params}
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

func TestSpecMarkdown(t *testing.T) {
	is := is.New(t)
	type file struct {
		Path string `param:"path" validate:"required" desc:"The file | its path."`
	}
	type sdkOnes struct {
		Size int `param:"sdk.batch.size" default:"0" desc:"Left out."`
	}
	params, err := Parameters(file{}, sdkOnes{})
	is.NoErr(err)
	spec := Specification{SourceParameters: params, DestinationParameters: params}
	is.Equal(spec.Markdown(), "| parameter | role | type | default | description |\n|---|---|---|---|---|\n"+
		"| `path` | both | string | (required) | The file \\| its path. |\n")
}
