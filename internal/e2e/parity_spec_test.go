package e2e

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/conduitio/conduit-commons/config"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/host"
	"github.com/matryer/is"
)

// incumbentBin returns the directory of the incumbent SDK's plugins. It
// skips the test when INCUMBENT_BIN is unset, unless CI is set, where a
// missing plugin is a failure.
func incumbentBin(t *testing.T) string {
	t.Helper()
	return fromMake(t, "INCUMBENT_BIN", "the incumbent's plugins")
}

// specify launches the plugin at path and returns its specification. The
// incumbent's plugins refuse to start without a connector ID, which Conduit
// always sets.
func specify(t *testing.T, path string) pconnector.Specification {
	t.Helper()
	p, err := host.Launch(path, host.Options{Schemas: schemas, ConnectorID: "spec"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	spec, err := p.Specifier()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := spec.Specify(t.Context(), pconnector.SpecifierSpecifyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Specification
}

// sdkParams returns the parameters whose names start with "sdk.".
func sdkParams(params config.Parameters) map[string]config.Parameter {
	out := map[string]config.Parameter{}
	for name, p := range params {
		if strings.HasPrefix(name, "sdk.") {
			out[name] = p
		}
	}
	return out
}

// TestSpecificationMatchesIncumbent holds connkit's sdk.* parameters to the
// incumbent SDK's, as its generator (a source) and log (a destination)
// plugins declare them over the protocol, and the file connector's to the
// incumbent's file connector's (its source turns schema extraction off by
// default): a pipeline file written for the incumbent names these
// parameters and relies on their defaults, so each must exist in connkit
// with the same type and default. connkit may declare more, listed here so
// that a new one is a decision, not an accident.
//
// Validations are not compared: connkit declares some the incumbent checks
// only at Configure (sdk.record.format's formats) or not at all (a negative
// sdk.batch.delay), so a value either refuses, connkit refuses in the
// specification too.
func TestSpecificationMatchesIncumbent(t *testing.T) {
	dir := incumbentBin(t)
	ofSource := func(s pconnector.Specification) config.Parameters { return s.SourceParams }
	ofDestination := func(s pconnector.Specification) config.Parameters { return s.DestinationParams }
	onlyConnkitSource := []string{"sdk.batch.bytes", "sdk.metrics.address", "sdk.metrics.logInterval"}
	onlyConnkitDestination := []string{"sdk.batch.bytes", "sdk.metrics.address", "sdk.metrics.logInterval", "sdk.retry.attempts", "sdk.retry.delay", "sdk.retry.maxDelay", "sdk.write.concurrency"}
	for _, tt := range []struct {
		role               string
		incumbent, connkit string
		params             func(pconnector.Specification) config.Parameters
		onlyConnkit        []string
	}{
		{"source", "generator", "connkit-generator", ofSource, onlyConnkitSource},
		{"destination", "log", "connkit-log", ofDestination, onlyConnkitDestination},
		{"file source", "file", "connkit-file", ofSource, onlyConnkitSource},
		{"file destination", "file", "connkit-file", ofDestination, onlyConnkitDestination},
	} {
		t.Run(tt.role, func(t *testing.T) {
			is := is.New(t)
			theirs := sdkParams(tt.params(specify(t, filepath.Join(dir, tt.incumbent))))
			ours := sdkParams(tt.params(specify(t, binary(tt.connkit))))
			is.True(len(theirs) > 0) // the incumbent's plugin declares sdk.* parameters

			var extra []string
			for _, name := range slices.Sorted(maps.Keys(ours)) {
				if _, ok := theirs[name]; !ok {
					extra = append(extra, name)
				}
			}
			is.Equal(extra, tt.onlyConnkit) // connkit's sdk.* parameters the incumbent lacks

			for _, name := range slices.Sorted(maps.Keys(theirs)) {
				want := theirs[name]
				got, ok := ours[name]
				if !ok {
					t.Errorf("%s: connkit's %s lacks %s (incumbent: type %v, default %q)", tt.role, tt.connkit, name, want.Type, want.Default)
					continue
				}
				if got.Type != want.Type {
					t.Errorf("%s: %s has type %v in connkit, %v in the incumbent", tt.role, name, got.Type, want.Type)
				}
				if got.Default != want.Default {
					t.Errorf("%s: %s defaults to %q in connkit, %q in the incumbent", tt.role, name, got.Default, want.Default)
				}
			}
		})
	}
}
