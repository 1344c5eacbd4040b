package sdktest

import (
	"context"
	"log/slog"
	"regexp"
	"strconv"
	"strings"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	clientv2 "github.com/conduitio/conduit-connector-protocol/pconnector/v2/client"
	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/config"
)

// role is what the specification and configuration checks need to know
// about a source or a destination.
type role struct {
	name    string // "source" or "destination"
	field   string // "Source" or "Destination"
	suite   string // "SourceSuite" or "DestinationSuite"
	c       sdk.Connector
	config  map[string]string
	invalid []Invalid
}

func sourceRole(s SourceSuite) role {
	return role{name: "source", field: "Source", suite: "SourceSuite", c: s.Connector, config: s.Config, invalid: s.Invalid}
}

func destinationRole(s DestinationSuite) role {
	return role{name: "destination", field: "Destination", suite: "DestinationSuite", c: s.Connector, config: s.Config, invalid: s.Invalid}
}

// params returns the role's parameters in spec.
func (r role) params(spec config.Specification) []config.Parameter {
	if r.name == "source" {
		return spec.SourceParameters
	}
	return spec.DestinationParameters
}

// configure configures the role from raw over the protocol, as Conduit
// does, in an sdk.Server of its own, which it then stops.
func (r role) configure(ctx context.Context, raw map[string]string) error {
	conn, stop, err := connect(r.c, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer stop()
	if r.name == "source" {
		_, err = clientv2.NewSourcePluginClient(conn).Configure(ctx, pconnector.SourceConfigureRequest{Config: raw})
	} else {
		_, err = clientv2.NewDestinationPluginClient(conn).Configure(ctx, pconnector.DestinationConfigureRequest{Config: raw})
	}
	return err
}

// semver is the version form Conduit resolves standalone:<name>@<version>
// with.
var semver = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// nameForm excludes what would break a plugin reference, standalone:<name>@<version>.
var nameForm = regexp.MustCompile(`^[^\s:@/]+$`)

func specChecks(r role) []check {
	return []check{
		{"Specification", func(t tb, ctx context.Context) { checkSpec(t, ctx, r) }},
		{"Configure/Valid", func(t tb, ctx context.Context) {
			if err := r.configure(ctx, r.config); err != nil {
				t.Fatalf("Configure rejects the suite's Config: %v\nGive %s.Config a configuration that works.", err, r.suite)
			}
		}},
		{"Configure/MissingRequired", func(t tb, ctx context.Context) { checkMissing(t, ctx, r) }},
		{"Configure/BadValues", func(t tb, ctx context.Context) { checkBadValues(t, ctx, r) }},
	}
}

func checkSpec(t tb, ctx context.Context, r role) {
	c := r.c
	if c.Name == "" {
		t.Errorf("Connector.Name is empty: pipelines refer to a plugin as standalone:<name>; set it")
	} else if !nameForm.MatchString(c.Name) {
		t.Errorf("Connector.Name %q cannot be written in a pipeline as standalone:<name>@<version>: leave out spaces, ':', '@' and '/'", c.Name)
	}
	if !semver.MatchString(c.Version) {
		t.Errorf("Connector.Version %q is not a semantic version with a leading v (such as v0.1.0): Conduit cannot resolve standalone:%s without it", c.Version, c.Name)
	}
	spec, err := c.Specification()
	if err != nil {
		t.Fatalf("Connector.Specification fails, so the plugin would not start: %v", err)
	}
	params := r.params(spec)
	if params == nil {
		t.Fatalf("the connector has no %s: set Connector.%s with sdk.New%s", r.name, r.field, r.field)
	}
	for _, p := range params {
		if strings.TrimSpace(p.Description) == "" {
			t.Errorf("parameter %q has no description: Conduit shows users the description; add a desc:\"...\" tag to its config field", p.Name)
		}
		if p.Default == "" || strings.Contains(p.Name, "*") {
			continue
		}
		if err := r.configure(ctx, merge(r.config, map[string]string{p.Name: p.Default})); err != nil && strings.Contains(err.Error(), strconv.Quote(p.Name)) {
			t.Errorf("parameter %q: its own default %q is rejected: %v\nMake the default pass the parameter's validations.", p.Name, p.Default, err)
		}
	}
}

// checkMissing removes each required parameter from the configuration in
// turn; Configure must fail and say which parameter is missing.
func checkMissing(t tb, ctx context.Context, r role) {
	spec, err := r.c.Specification()
	if err != nil {
		t.Fatalf("Connector.Specification fails: %v", err)
	}
	for _, p := range r.params(spec) {
		if !p.Required || strings.Contains(p.Name, "*") {
			continue
		}
		cfg := merge(r.config)
		delete(cfg, p.Name)
		err := r.configure(ctx, cfg)
		switch {
		case err == nil:
			t.Errorf("Configure accepts a configuration without the required parameter %q: check required parameters in Configure (validate:\"required\"), not later in Open", p.Name)
		case !strings.Contains(err.Error(), p.Name):
			t.Errorf("Configure without the required parameter %q fails with %q, which does not name it: say which parameter is missing", p.Name, err)
		}
	}
}

// badValue returns a value p must reject, and why, or "" if the kit knows
// none.
func badValue(p config.Parameter) (value, why string) {
	switch {
	case p.Type == config.TypeInt || p.Type == config.TypeFloat:
		return "sdktest-not-a-number", "not a number"
	case p.Type == config.TypeBool:
		return "sdktest-not-a-bool", "not a bool"
	case p.Type == config.TypeDuration:
		return "sdktest-not-a-duration", "not a duration"
	case len(p.OneOf) > 0:
		return "sdktest-not-allowed", "not one of " + strings.Join(p.OneOf, ", ")
	case len(p.NoneOf) > 0:
		return p.NoneOf[0], "excluded"
	}
	return "", ""
}

func checkBadValues(t tb, ctx context.Context, r role) {
	spec, err := r.c.Specification()
	if err != nil {
		t.Fatalf("Connector.Specification fails: %v", err)
	}
	invalid := []Invalid{{Config: map[string]string{"sdktest.unknown": "x"}, Param: "sdktest.unknown"}}
	whys := []string{"an unknown parameter"}
	for _, p := range r.params(spec) {
		if strings.Contains(p.Name, "*") {
			continue
		}
		if v, why := badValue(p); v != "" {
			invalid = append(invalid, Invalid{Config: map[string]string{p.Name: v}, Param: p.Name})
			whys = append(whys, why)
		}
		if p.GreaterThan != nil && (p.Type == config.TypeInt || p.Type == config.TypeFloat) {
			invalid = append(invalid, Invalid{Config: map[string]string{p.Name: strconv.FormatFloat(*p.GreaterThan, 'f', -1, 64)}, Param: p.Name})
			whys = append(whys, "not greater than its lower bound")
		}
	}
	for _, inv := range r.invalid {
		invalid = append(invalid, inv)
		whys = append(whys, "listed in "+r.suite+".Invalid")
	}
	for i, inv := range invalid {
		err := r.configure(ctx, merge(r.config, inv.Config))
		switch {
		case err == nil:
			t.Errorf("Configure accepts %v (%s): reject bad values in Configure, with an error naming %q", inv.Config, whys[i], inv.Param)
		case !strings.Contains(err.Error(), inv.Param):
			t.Errorf("Configure rejects %v (%s) with %q, which does not name the parameter: name %q in the error", inv.Config, whys[i], err, inv.Param)
		}
	}
}

// checkSpecify asks the plugin for its specification over the protocol, as
// Conduit does when it loads plugins, and compares it with the Connector's.
func checkSpecify(t tb, ctx context.Context, r role, run runner) {
	resp, err := run.specifier(t).Specify(ctx, pconnector.SpecifierSpecifyRequest{})
	if err != nil {
		t.Fatalf("Specify over the protocol fails: %v", err)
	}
	got := resp.Specification
	if got.Name != r.c.Name || got.Version != r.c.Version {
		t.Errorf("the plugin says it is %s@%s, the Connector under test is %s@%s: build the plugin from the same Connector", got.Name, got.Version, r.c.Name, r.c.Version)
	}
	spec, err := r.c.Specification()
	if err != nil {
		t.Fatalf("Connector.Specification fails: %v", err)
	}
	gotParams := got.SourceParams
	if r.name == "destination" {
		gotParams = got.DestinationParams
	}
	for _, p := range r.params(spec) {
		if _, ok := gotParams[p.Name]; !ok {
			t.Errorf("the plugin's %s specification lacks parameter %q that the Connector declares: rebuild the plugin", r.name, p.Name)
		}
	}
	if len(gotParams) != len(r.params(spec)) {
		t.Errorf("the plugin declares %d %s parameters, the Connector %d: rebuild the plugin", len(gotParams), r.name, len(r.params(spec)))
	}
}
