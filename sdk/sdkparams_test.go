package sdk

import (
	"context"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/connkit/connkit/sdk/config"
)

type nopSource struct{}

func (nopSource) Open(context.Context, Position) error { return nil }
func (nopSource) Read(context.Context) (Record, error) { return Record{}, nil }
func (nopSource) Teardown(context.Context) error       { return nil }

func newNopSource(nopConfig) (nopSource, error) { return nopSource{}, nil }

// sdkParameterNames returns the names of the parameters of settings.
func sdkParameterNames(settings any) []string {
	params, err := config.Parameters(settings)
	if err != nil {
		panic(err)
	}
	var names []string
	for _, p := range params {
		names = append(names, p.Name)
	}
	return names
}

// TestConfigureRefusesEverySDKParameter sets every sdk.* parameter of the
// default middleware to a value it cannot take and checks that Configure
// refuses the configuration with one error that names each parameter, so
// a pipeline author fixes them all in one go, on one line, as Conduit
// logs it. The parameters that take any
// string (subjects and the schema context's name, as in the incumbent SDK)
// have no bad value and are listed apart; sdk.record.format.options is bad
// only for a format, so it has a format of its own in a second config.
func TestConfigureRefusesEverySDKParameter(t *testing.T) {
	for _, tt := range []struct {
		role      string
		names     []string // every sdk.* parameter of the role
		anyString []string // the role's parameters that take any string
		bad       []map[string]string
		configure func(map[string]string) error
	}{
		{
			role:      "source",
			names:     sdkParameterNames(sourceSettings{}),
			anyString: []string{"sdk.schema.context.name", "sdk.schema.extract.key.subject", "sdk.schema.extract.payload.subject"},
			bad: []map[string]string{{
				"sdk.batch.size":                     "-1",
				"sdk.batch.delay":                    "-1s",
				"sdk.batch.bytes":                    "lots",
				"sdk.metrics.address":                "localhost",
				"sdk.metrics.logInterval":            "-1s",
				"sdk.schema.context.enabled":         "maybe",
				"sdk.schema.extract.type":            "json",
				"sdk.schema.extract.payload.enabled": "2",
				"sdk.schema.extract.key.enabled":     "yes please",
			}},
			configure: func(raw map[string]string) error {
				_, err := factory{c: Connector{Name: "nop", Version: "v0.1.0", Source: NewSource(newNopSource)}}.ConfigureSource(raw)
				return err
			},
		},
		{
			role:  "destination",
			names: sdkParameterNames(destinationSettings{}),
			bad: []map[string]string{
				{
					"sdk.batch.size":                     "ten",
					"sdk.batch.delay":                    "soon",
					"sdk.batch.bytes":                    "-5",
					"sdk.metrics.address":                "127.0.0.1:99999",
					"sdk.metrics.logInterval":            "often",
					"sdk.rate.perSecond":                 "-2",
					"sdk.rate.burst":                     "1.5",
					"sdk.retry.attempts":                 "-1",
					"sdk.retry.delay":                    "-2s",
					"sdk.retry.maxDelay":                 "forever",
					"sdk.record.format":                  "xml",
					"sdk.schema.extract.payload.enabled": "maybe",
					"sdk.schema.extract.key.enabled":     "nope",
					"sdk.write.concurrency":              "0",
				},
				{
					"sdk.batch.size":                     "ten",
					"sdk.batch.delay":                    "soon",
					"sdk.batch.bytes":                    "-5",
					"sdk.rate.perSecond":                 "-2",
					"sdk.rate.burst":                     "1.5",
					"sdk.retry.delay":                    "1s",
					"sdk.retry.maxDelay":                 "100ms",
					"sdk.record.format":                  "debezium/json",
					"sdk.record.format.options":          "debezium.nope=1",
					"sdk.schema.extract.payload.enabled": "maybe",
					"sdk.schema.extract.key.enabled":     "nope",
					"sdk.write.concurrency":              "lots",
				},
			},
			configure: func(raw map[string]string) error {
				_, err := configureDestination(Connector{Name: "nop", Version: "v0.1.0", Destination: NewDestination(newNop)}, raw)
				return err
			},
		},
	} {
		t.Run(tt.role, func(t *testing.T) {
			covered := slices.Clone(tt.anyString)
			for _, raw := range tt.bad {
				covered = append(covered, slices.Collect(maps.Keys(raw))...)
				err := tt.configure(raw)
				if err == nil {
					t.Fatalf("%v was accepted", raw)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("the error is not one line, as Conduit logs it:\n%v", err)
				}
				for _, name := range slices.Sorted(maps.Keys(raw)) {
					if name == "sdk.record.format" && raw["sdk.record.format.options"] != "" {
						continue // a good format, for its options to be judged
					}
					// As a whole word: sdk.record.format is a prefix of
					// sdk.record.format.options.
					if !regexp.MustCompile(regexp.QuoteMeta(name) + `[":]`).MatchString(err.Error()) {
						t.Errorf("the error does not name %s=%q:\n%v", name, raw[name], err)
					}
				}
			}
			slices.Sort(covered)
			covered = slices.Compact(covered)
			if !slices.Equal(covered, tt.names) {
				t.Errorf("the test covers %v, the %s's sdk.* parameters are %v", covered, tt.role, tt.names)
			}
		})
	}
}

// TestReadmeNamesEverySDKParameter holds the table of connkit's README
// that lists the parameters every connector gets to the SDK's: every sdk.*
// parameter of either role is named in its first column, in full or as a
// suffix of the full name before it (`.delay` after `sdk.batch.size`), and
// every name there is a parameter.
func TestReadmeNamesEverySDKParameter(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile(`(?s)\n## Parameters every connector gets\n(.*?)\n## `).FindSubmatch(readme)
	if section == nil {
		t.Fatal("README has no section Parameters every connector gets")
	}
	params := slices.Compact(slices.Sorted(slices.Values(append(sdkParameterNames(sourceSettings{}), sdkParameterNames(destinationSettings{})...))))
	named := map[string]bool{}
	for line := range strings.Lines(string(section[1])) {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.Contains(cells[1], "`sdk.") {
			continue // not a row of parameters
		}
		full := ""
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[1], -1) {
			name := m[1]
			if strings.HasPrefix(name, ".") {
				name = completeName(full, name, params)
			} else {
				full = name
			}
			if !slices.Contains(params, name) {
				t.Errorf("README's parameters every connector gets name %s, which is no sdk.* parameter (%s)", m[1], name)
			}
			named[name] = true
		}
	}
	for _, p := range params {
		if !named[p] {
			t.Errorf("README's parameters every connector gets leave out %s", p)
		}
	}
}

// completeName returns the parameter among params that suffix, such as
// .delay, names after the full name full: full, or the longest of its
// prefixes, followed by suffix. Without one, it returns suffix.
func completeName(full, suffix string, params []string) string {
	for prefix := full; prefix != ""; {
		if slices.Contains(params, prefix+suffix) {
			return prefix + suffix
		}
		i := strings.LastIndexByte(prefix, '.')
		if i < 0 {
			break
		}
		prefix = prefix[:i]
	}
	return suffix
}
