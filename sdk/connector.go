package sdk

import (
	"fmt"
	"reflect"
)

// Connector is what a plugin binary serves: its identity and the roles it
// plays. At least one of Source and Destination must be set.
type Connector struct {
	Name        string // how pipelines refer to it: standalone:<Name>
	Version     string // semantic version with a leading v, e.g. v0.1.0
	Summary     string // one line
	Description string
	Author      string

	Source      Factory[Source]
	Destination Factory[Destination]
}

// Factory builds a configured connector of type T from the raw configuration
// Conduit sends. Make one with [NewSource] or [NewDestination]; the zero
// value means the role is not played.
type Factory[T any] struct {
	params []Parameter
	err    error // a malformed config struct, reported by Serve
	build  func(raw map[string]string) (T, error)
}

// Parameters returns the parameters the factory accepts.
func (f Factory[T]) Parameters() []Parameter { return f.params }

// New parses raw into the factory's config struct and builds the connector.
func (f Factory[T]) New(raw map[string]string) (T, error) {
	var zero T
	if f.err != nil {
		return zero, f.err
	}
	if f.build == nil {
		return zero, fmt.Errorf("sdk: this connector does not play this role")
	}
	return f.build(raw)
}

func (f Factory[T]) isSet() bool { return f.build != nil || f.err != nil }

// NewSource returns a factory for sources built by newSource from a config
// struct C, whose field tags declare the source's parameters (see
// [ParseConfig]). newSource runs once the configuration is parsed and valid;
// it should not do I/O, which belongs in Open.
func NewSource[C any, S Source](newSource func(C) (S, error)) Factory[Source] {
	return newFactory(func(c C) (Source, error) { return newSource(c) })
}

// NewDestination is [NewSource] for destinations.
func NewDestination[C any, D Destination](newDestination func(C) (D, error)) Factory[Destination] {
	return newFactory(func(c C) (Destination, error) { return newDestination(c) })
}

func newFactory[C, T any](build func(C) (T, error)) Factory[T] {
	var zero C
	if reflect.TypeOf(zero) == nil || reflect.TypeOf(zero).Kind() != reflect.Struct {
		return Factory[T]{err: fmt.Errorf("sdk: a connector's config must be a struct type, got %v", reflect.TypeOf(zero))}
	}
	params, err := Parameters(zero)
	if err != nil {
		return Factory[T]{err: err}
	}
	return Factory[T]{params: params, build: func(raw map[string]string) (T, error) {
		var cfg C
		if err := decode(raw, params, reflect.ValueOf(&cfg).Elem()); err != nil {
			var zero T
			return zero, fmt.Errorf("invalid configuration: %w", err)
		}
		return build(cfg)
	}}
}
