package sdk

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/connkit/connkit/sdk/config"
)

// Connector is what a plugin binary serves: its identity, and the roles it
// plays. At least one of Source and Destination must be set.
type Connector struct {
	Name        string // how pipelines refer to it: standalone:<Name>
	Version     string // semantic version with a leading v, e.g. v0.1.0
	Summary     string // one line
	Description string
	Author      string

	Source      Factory[Source]
	Destination Factory[Destination]

	// SourceDefaults and DestinationDefaults change, by name, the defaults
	// of the sdk.* parameters the SDK adds to the role, such as
	// {"sdk.batch.size": "100"}; a pipeline still sets them as it likes.
	// The others keep the SDK's defaults, which the README lists. Serve
	// refuses a name that is not one of the role's sdk.* parameters, and a
	// value the parameter does not take.
	SourceDefaults      map[string]string
	DestinationDefaults map[string]string
}

// Factory builds a configured connector of type T from its config struct.
// Make one with [NewSource] or [NewDestination]; the zero value means the
// role is not played.
type Factory[T any] struct {
	config any   // a pointer to the zero config struct, whose tags declare the parameters
	err    error // a malformed config struct, reported by Serve
	// build parses raw into a new config struct and, if not nil, into
	// settings, in one call, and builds the connector from the config.
	build func(raw map[string]string, settings any) (T, error)
}

// NewSource returns a factory for sources built by newSource from a config
// struct C, whose field tags declare the source's parameters (see package
// config). newSource runs once the configuration is parsed and valid; it
// should not do I/O, which belongs in Open.
func NewSource[C any, S Source](newSource func(C) (S, error)) Factory[Source] {
	return newFactory(func(c C) (Source, error) { return newSource(c) })
}

// NewDestination is [NewSource] for destinations.
func NewDestination[C any, D Destination](newDestination func(C) (D, error)) Factory[Destination] {
	return newFactory(func(c C) (Destination, error) { return newDestination(c) })
}

func newFactory[C, T any](newT func(C) (T, error)) Factory[T] {
	zero := new(C)
	if _, err := config.Parameters(zero); err != nil {
		return Factory[T]{err: err}
	}
	return Factory[T]{config: zero, build: func(raw map[string]string, settings any) (T, error) {
		var cfg C
		targets := []any{&cfg}
		if settings != nil {
			targets = append(targets, settings)
		}
		if err := config.Parse(raw, targets...); err != nil {
			var t T
			return t, invalid(err)
		}
		t, err := newT(cfg)
		if err != nil {
			return t, invalid(err)
		}
		return t, nil
	}}
}

// New parses raw into the factory's config struct and builds the
// connector, as Configure does but without the SDK's sdk.* parameters:
// raw may name only the config struct's parameters.
func (f Factory[T]) New(raw map[string]string) (T, error) {
	if err := f.check(); err != nil {
		var t T
		return t, err
	}
	return f.build(raw, nil)
}

// Wrap returns a factory with f's parameters whose every connector is
// what wrap returns for the one f builds; wrap is not called when f
// fails. A test gives a copy of its Connector the wrapped factory to put
// a layer between the SDK and every connector the Connector makes: a
// fault injector of package sdktest, or a log of the calls.
//
// The SDK calls the outermost layer's Open, Teardown, and Write or Read.
// It finds the optional interfaces ([ConcurrentDestination] and its
// WriteSplit, [Acker], [BatchReader], the lifecycle hooks) in the
// outermost layer that implements them, and calls them there, following
// Unwrap methods that return the [Source] or [Destination] a layer wraps;
// a layer without one hides them. So a layer over a ConcurrentDestination
// gets concurrent Writes, and one over a BatchReader sees the reads only
// if it implements ReadBatch too. Wrap of the zero Factory, or with a nil
// wrap, returns f.
func (f Factory[T]) Wrap(wrap func(T) T) Factory[T] {
	if f.build == nil || wrap == nil {
		return f
	}
	build := f.build
	f.build = func(raw map[string]string, settings any) (T, error) {
		t, err := build(raw, settings)
		if err != nil {
			return t, err
		}
		return wrap(t), nil
	}
	return f
}

// configure builds the connector from raw, the configuration Conduit
// sends, with the connector's defaults, and fills settings, the SDK's
// sdk.* parameters, in the same call.
func (f Factory[T]) configure(raw, defaults map[string]string, settings any) (T, error) {
	if err := f.check(); err != nil {
		var t T
		return t, err
	}
	return f.build(withDefaults(raw, defaults), settings)
}

func (f Factory[T]) isSet() bool { return f.build != nil || f.err != nil }

func (f Factory[T]) check() error {
	if !f.isSet() {
		return errors.New("sdk: this connector does not play this role")
	}
	return f.err
}

func invalid(err error) error { return fmt.Errorf("invalid configuration: %w", err) }

// semver is a semantic version with the leading v Conduit requires; without
// it a pipeline's standalone:<name> reference cannot resolve.
var semver = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// Specification checks c and returns its specification: each role's
// parameters are its config struct's and the SDK's sdk.* ones, with the
// defaults c gives them.
func (c Connector) Specification() (config.Specification, error) {
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
	spec := config.Specification{Name: c.Name, Version: c.Version, Summary: c.Summary, Description: c.Description, Author: c.Author}
	var err error
	if c.Source.isSet() {
		spec.SourceParameters, err = parameters(c.Source, &sourceSettings{}, "SourceDefaults", c.SourceDefaults)
		errs = append(errs, err)
	}
	if c.Destination.isSet() {
		spec.DestinationParameters, err = parameters(c.Destination, &destinationSettings{}, "DestinationDefaults", c.DestinationDefaults)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return config.Specification{}, err
	}
	return spec, nil
}

// parameters returns the parameters of a role: its config struct's and
// those of settings, its sdk.* parameters, with the defaults the
// connector's field named field gives them.
func parameters[T any](f Factory[T], settings any, field string, defaults map[string]string) ([]config.Parameter, error) {
	if f.err != nil {
		return nil, f.err
	}
	if err := config.Parse(defaults, settings); err != nil {
		return nil, fmt.Errorf("sdk: Connector.%s: %w", field, err)
	}
	params, err := config.Parameters(f.config, settings)
	if err != nil {
		return nil, fmt.Errorf("sdk: %w: the SDK declares it, and so does the connector", err)
	}
	for i, p := range params {
		if v, ok := defaults[p.Name]; ok {
			params[i].Default = v
		}
	}
	return params, nil
}
