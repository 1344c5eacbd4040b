package config

// Specification is what a connector tells Conduit and its users about
// itself: its identity and each role's parameters. The plugin binary prints
// it with its "spec" argument: as JSON, as a connector.yaml file ([YAML])
// or as a README table ([Markdown]).
type Specification struct {
	Name                  string      `json:"name"`
	Version               string      `json:"version"`
	Summary               string      `json:"summary,omitempty"`
	Description           string      `json:"description,omitempty"`
	Author                string      `json:"author,omitempty"`
	SourceParameters      []Parameter `json:"sourceParameters,omitempty"`
	DestinationParameters []Parameter `json:"destinationParameters,omitempty"`
}
