package conduit

import (
	"testing"

	"github.com/matryer/is"
)

func TestPipelineFile(t *testing.T) {
	is := is.New(t)
	p := Pipeline{
		ID:          "e2e",
		Source:      Component{ID: "source", Plugin: "builtin:generator", Settings: map[string]string{"recordCount": "10", "format.type": "structured"}},
		Destination: Component{ID: "destination", Plugin: "standalone:log"},
		Processors:  []Component{{ID: "key", Plugin: "field.set", Settings: map[string]string{"field": ".Key", "value": `{{ .Position }}`}}},
	}
	is.Equal(p.File(), `version: "2.2"
pipelines:
  - id: e2e
    status: running
    connectors:
      - id: source
        type: source
        plugin: builtin:generator
        settings:
          format.type: "structured"
          recordCount: "10"
      - id: destination
        type: destination
        plugin: standalone:log
    processors:
      - id: key
        plugin: field.set
        settings:
          field: ".Key"
          value: "{{ .Position }}"
`)
}
