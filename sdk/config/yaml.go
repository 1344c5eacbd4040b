package config

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	cconfig "github.com/conduitio/conduit-commons/config"
)

// YAML returns the specification as a connector.yaml file in the format of
// the incumbent Conduit SDK's specgen (version "1.0"), which Conduit's
// tooling reads: the connector's identity, then each role's parameters
// with name, description, type, default and validations, the connector's
// own first (required ones first), then the sdk.* ones, each by name. A
// []string parameter has type string, as on the wire.
func (s Specification) YAML() []byte {
	var b bytes.Buffer
	b.WriteString("version: \"1.0\"\nspecification:\n")
	for _, f := range [][2]string{{"name", s.Name}, {"summary", s.Summary}, {"description", s.Description}, {"version", s.Version}, {"author", s.Author}} {
		fmt.Fprintf(&b, "  %s: %s\n", f[0], yamlString(f[1]))
	}
	for _, role := range []struct {
		name   string
		params []Parameter
	}{{"source", s.SourceParameters}, {"destination", s.DestinationParameters}} {
		if len(role.params) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  %s:\n    parameters:\n", role.name)
		for _, p := range specgenOrder(role.params) {
			cp := p.conduit()
			fmt.Fprintf(&b, "      - name: %s\n", yamlString(p.Name))
			fmt.Fprintf(&b, "        description: %s\n", yamlString(p.Description))
			fmt.Fprintf(&b, "        type: %s\n", yamlString(cp.Type.String()))
			fmt.Fprintf(&b, "        default: %s\n", yamlString(p.Default))
			if len(cp.Validations) == 0 {
				b.WriteString("        validations: []\n")
				continue
			}
			b.WriteString("        validations:\n")
			for _, v := range cp.Validations {
				fmt.Fprintf(&b, "          - type: %s\n", yamlString(v.Type().String()))
				fmt.Fprintf(&b, "            value: %s\n", yamlString(validationValue(v)))
			}
		}
	}
	return b.Bytes()
}

// specgenOrder returns params in the order the incumbent's specgen writes
// them (see [specgenCompare]).
func specgenOrder(params []Parameter) []Parameter {
	out := slices.Clone(params)
	slices.SortStableFunc(out, specgenCompare)
	return out
}

// specgenCompare orders parameters as the incumbent's specgen does: the
// connector's own before the sdk.* ones, required ones first among the
// connector's own, then by name.
func specgenCompare(a, b Parameter) int {
	rank := func(p Parameter) int {
		switch {
		case strings.HasPrefix(p.Name, "sdk."):
			return 2
		case p.Required:
			return 0
		}
		return 1
	}
	if r := rank(a) - rank(b); r != 0 {
		return r
	}
	return strings.Compare(a.Name, b.Name)
}

// validationValue writes a validation's value as the incumbent's specgen
// does: bounds in %g, lists comma-separated, a regex's source, and nothing
// for required.
func validationValue(v cconfig.Validation) string {
	switch v := v.(type) {
	case cconfig.ValidationGreaterThan:
		return fmt.Sprintf("%g", v.V)
	case cconfig.ValidationLessThan:
		return fmt.Sprintf("%g", v.V)
	case cconfig.ValidationInclusion:
		return strings.Join(v.List, ",")
	case cconfig.ValidationExclusion:
		return strings.Join(v.List, ",")
	case cconfig.ValidationRegex:
		return v.Regex.String()
	}
	return ""
}

// yamlString quotes s as a YAML double-quoted scalar: Go's escapes are all
// YAML's too, so any string survives as it is.
func yamlString(s string) string { return strconv.Quote(s) }
