package config

import (
	"fmt"
	"slices"
	"strings"
)

// Markdown returns a Markdown table of the connector's own parameters, for
// its README: name, role (source, destination or both), type, default and
// description with the allowed values, in the order of [Specification.YAML].
// The sdk.* parameters every connector has are left out; the SDK's README
// lists them.
func (s Specification) Markdown() string {
	type row struct {
		p    Parameter
		role string
	}
	var rows []row
	add := func(params []Parameter, role string) {
		for _, p := range params {
			if strings.HasPrefix(p.Name, "sdk.") {
				continue
			}
			i := len(rows)
			for j, r := range rows {
				if r.p.Name == p.Name {
					i = j
				}
			}
			switch {
			case i == len(rows):
				rows = append(rows, row{p, role})
			case sameParameter(rows[i].p, p):
				rows[i].role = "both"
			default:
				rows = append(rows, row{p, role})
			}
		}
	}
	add(s.SourceParameters, "source")
	add(s.DestinationParameters, "destination")
	var b strings.Builder
	b.WriteString("| parameter | role | type | default | description |\n|---|---|---|---|---|\n")
	slices.SortStableFunc(rows, func(a, b row) int { return specgenCompare(a.p, b.p) })
	for _, r := range rows {
		def := "`" + r.p.Default + "`"
		switch {
		case r.p.Required && r.p.Default == "":
			def = "(required)"
		case r.p.Default == "":
			def = ""
		}
		desc := r.p.Description
		if len(r.p.OneOf) > 0 {
			desc += " One of `" + strings.Join(r.p.OneOf, "`, `") + "`."
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", r.p.Name, r.role, r.p.Type, def, markdownCell(desc))
	}
	return b.String()
}

// sameParameter reports whether a and b say the same to a user.
func sameParameter(a, b Parameter) bool {
	return a.Name == b.Name && a.Type == b.Type && a.Default == b.Default && a.Description == b.Description && a.Required == b.Required
}

// markdownCell makes text fit in one table cell.
func markdownCell(text string) string {
	return strings.NewReplacer("|", `\|`, "\r\n", " ", "\n", " ").Replace(text)
}
