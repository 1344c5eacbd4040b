package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	cconfig "github.com/conduitio/conduit-commons/config"
	"github.com/connkit/connkit/sdk/config"
	"github.com/matryer/is"
)

type nopDestination struct{}

func (nopDestination) Open(context.Context) error                       { return nil }
func (nopDestination) Write(_ context.Context, r []Record) (int, error) { return len(r), nil }
func (nopDestination) Teardown(context.Context) error                   { return nil }

type nopConfig struct {
	Level string `param:"level" default:"info" validate:"inclusion=info|warn" desc:"How loud."`
}

func newNop(nopConfig) (nopDestination, error) { return nopDestination{}, nil }

func TestServeSpec(t *testing.T) {
	is := is.New(t)
	c := Connector{Name: "nop", Version: "v1.2.3-rc.1", Summary: "does nothing", Destination: NewDestination(newNop)}
	var out bytes.Buffer
	is.NoErr(serve(c, []string{"spec"}, func(string) string { return "" }, &out, &out))
	var spec config.Specification
	is.NoErr(json.Unmarshal(out.Bytes(), &spec))
	is.Equal(spec.Name, "nop")
	is.Equal(spec.Version, "v1.2.3-rc.1")
	var names []string
	for _, p := range spec.DestinationParameters {
		names = append(names, p.Name)
	}
	is.Equal(names[0], "level") // the connector's, then the default middleware's sdk.* parameters
	is.Equal(spec.DestinationParameters[0].OneOf, []string{"info", "warn"})
	is.Equal(len(spec.SourceParameters), 0)

	// What Conduit receives carries the same parameters.
	p := c.factory(spec, "").Specification().DestinationParams["level"]
	is.Equal(p.Default, "info")
	is.Equal(p.Description, "How loud.")
	is.Equal(len(p.Validations), 1)
}

func TestServeRejectsInvalidConnectors(t *testing.T) {
	type badConfig struct {
		C chan int `param:"c"`
	}
	tests := []struct {
		name string
		c    Connector
		args []string
		want string
	}{
		{"no name", Connector{Version: "v0.1.0", Destination: NewDestination(newNop)}, nil, "Name is empty"},
		{"no version", Connector{Name: "x", Destination: NewDestination(newNop)}, nil, `Version "" is not a semantic version`},
		{"version without v", Connector{Name: "x", Version: "1.0.0", Destination: NewDestination(newNop)}, nil, "not a semantic version"},
		{"the incumbent's unset version", Connector{Name: "x", Version: "(devel)", Destination: NewDestination(newNop)}, nil, `"(devel)" is not a semantic version such as v0.1.0, which Conduit needs to resolve standalone:x; set it when building (go build -ldflags "-X 'PACKAGE.version=v1.2.3'") and give the variable a default such as v0.0.0-dev`},
		{"no role", Connector{Name: "x", Version: "v0.1.0"}, nil, "neither a Source nor a Destination"},
		{"bad config", Connector{Name: "x", Version: "v0.1.0", Destination: NewDestination(func(badConfig) (nopDestination, error) { return nopDestination{}, nil })}, nil, "unsupported type"},
		{"unknown argument", Connector{Name: "x", Version: "v0.1.0", Destination: NewDestination(newNop)}, []string{"run"}, "usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := serve(tt.c, tt.args, func(string) string { return "" }, &out, &out)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestFactoryNew(t *testing.T) {
	is := is.New(t)
	f := NewDestination(newNop)
	_, err := f.New(map[string]string{"level": "loud"})
	is.True(strings.Contains(err.Error(), `invalid configuration: parameter "level": got "loud", expected one of info, warn`))
	d, err := f.New(nil)
	is.NoErr(err)
	is.Equal(d, nopDestination{})
	var none Factory[Source]
	_, err = none.New(nil)
	is.True(err != nil)
}

// TestServeSpecShowsLists checks that a []string parameter is a list in the
// specification users read, and a string on the wire, as Conduit has no
// list type and the incumbent SDK sends lists as strings too.
func TestServeSpecShowsLists(t *testing.T) {
	is := is.New(t)
	type listConfig struct {
		Tables []string `param:"tables" default:"a,b" desc:"Comma-separated tables."`
	}
	c := Connector{Name: "nop", Version: "v0.1.0",
		Destination: NewDestination(func(listConfig) (nopDestination, error) { return nopDestination{}, nil })}
	var out bytes.Buffer
	is.NoErr(serve(c, []string{"spec"}, func(string) string { return "" }, &out, &out))
	is.True(strings.Contains(out.String(), `"type": "[]string"`)) // what `binary spec` prints
	p := c.factory(mustSpec(t, c), "").Specification().DestinationParams["tables"]
	is.Equal(p.Type, cconfig.ParameterTypeString) // what Conduit receives
	is.Equal(p.Default, "a,b")
}

func mustSpec(t *testing.T, c Connector) config.Specification {
	t.Helper()
	spec, err := c.Specification()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}
