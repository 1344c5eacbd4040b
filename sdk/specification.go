package sdk

import (
	"errors"
	"fmt"
	"regexp"
)

// Specification is what a connector tells Conduit about itself.
type Specification struct {
	Name                  string      `json:"name"`
	Version               string      `json:"version"`
	Summary               string      `json:"summary,omitempty"`
	Description           string      `json:"description,omitempty"`
	Author                string      `json:"author,omitempty"`
	SourceParameters      []Parameter `json:"sourceParameters,omitempty"`
	DestinationParameters []Parameter `json:"destinationParameters,omitempty"`
}

// semver is a semantic version with the leading v Conduit requires; without
// it a pipeline's standalone:<name> reference cannot resolve.
var semver = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// Specification checks c and returns its specification.
func (c Connector) Specification() (Specification, error) {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("sdk: Connector.Name is empty"))
	}
	if !semver.MatchString(c.Version) {
		errs = append(errs, fmt.Errorf("sdk: Connector.Version %q is not a semantic version such as v0.1.0, which Conduit needs to resolve standalone:%s; "+
			"set it when building (go build -ldflags \"-X 'PACKAGE.version=v1.2.3'\") and give the variable a default such as v0.0.0-dev, not the incumbent SDK's \"(devel)\"", c.Version, c.Name))
	}
	if !c.Source.isSet() && !c.Destination.isSet() {
		errs = append(errs, errors.New("sdk: Connector has neither a Source nor a Destination"))
	}
	errs = append(errs, c.Source.err, c.Destination.err)
	spec := Specification{
		Name:        c.Name,
		Version:     c.Version,
		Summary:     c.Summary,
		Description: c.Description,
		Author:      c.Author,
	}
	var err error
	if c.Source.isSet() {
		spec.SourceParameters, err = parametersWith(c.Source.params, c.sourceGroups(&sourcePlan{}))
		errs = append(errs, err)
	}
	if c.Destination.isSet() {
		spec.DestinationParameters, err = parametersWith(c.Destination.params, c.destinationGroups(&destinationPlan{}))
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return Specification{}, err
	}
	return spec, nil
}
