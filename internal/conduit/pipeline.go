package conduit

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Pipeline is a pipeline file's one pipeline, running: a source, the
// processors its records pass through, in order, and a destination.
type Pipeline struct {
	ID                  string
	Source, Destination Component
	Processors          []Component
}

// Component is a connector or a processor of a pipeline: its id, its plugin
// (builtin:generator, standalone:postgres, field.set, …) and its settings.
type Component struct {
	ID, Plugin string
	Settings   map[string]string
}

// File returns the pipeline file, version 2.2, for [Options.Pipeline]: the
// settings sorted by name, every value quoted.
func (p Pipeline) File() string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: \"2.2\"\npipelines:\n  - id: %s\n    status: running\n    connectors:\n", p.ID)
	for _, c := range []struct {
		typ string
		Component
	}{{"source", p.Source}, {"destination", p.Destination}} {
		fmt.Fprintf(&b, "      - id: %s\n        type: %s\n", c.ID, c.typ)
		c.write(&b)
	}
	if len(p.Processors) > 0 {
		b.WriteString("    processors:\n")
	}
	for _, c := range p.Processors {
		fmt.Fprintf(&b, "      - id: %s\n", c.ID)
		c.write(&b)
	}
	return b.String()
}

// write writes c's plugin and settings, the lines under its id.
func (c Component) write(b *strings.Builder) {
	fmt.Fprintf(b, "        plugin: %s\n", c.Plugin)
	if len(c.Settings) == 0 {
		return
	}
	b.WriteString("        settings:\n")
	for _, k := range slices.Sorted(maps.Keys(c.Settings)) {
		fmt.Fprintf(b, "          %s: %q\n", k, c.Settings[k])
	}
}
