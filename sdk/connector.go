package sdk

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/connkit/connkit/middleware"
)

// Connector is what a plugin binary serves: its identity, the roles it
// plays, and the defaults of the sdk.* parameters the SDK adds to every
// connector. At least one of Source and Destination must be set.
type Connector struct {
	Name        string // how pipelines refer to it: standalone:<Name>
	Version     string // semantic version with a leading v, e.g. v0.1.0
	Summary     string // one line
	Description string
	Author      string

	Source      Factory[Source]
	Destination Factory[Destination]

	// The defaults of the sdk.* parameters, one group each, which a
	// pipeline may override; nil keeps the SDK's, given for each. A group
	// set here replaces all of that group's defaults and no other group's:
	// to change one setting, start from the group's Default function and
	// change that field (see the example). Each group's parameters are in
	// the specification of the roles it applies to, with the same names,
	// types, defaults and meanings as in the incumbent Conduit SDK.
	Batching       *Batching                  // sources and destinations; nil: DefaultBatching(), {Size: 0, Delay: 0, Bytes: 3932160}
	Retry          *Retry                     // destinations; nil: DefaultRetry(), {Attempts: 8, Delay: 100ms, MaxDelay: 10s}
	SchemaEncoding *middleware.SchemaEncoding // sources; nil: middleware.DefaultSchemaEncoding(), {Type: "avro", Payload: true, PayloadSubject: "payload", Key: true, KeySubject: "key", Context: true, ContextName: ""}
	SchemaDecoding *middleware.SchemaDecoding // destinations; nil: middleware.DefaultSchemaDecoding(), {Payload: true, Key: true}
	RecordFormat   *middleware.RecordFormat   // destinations; nil: middleware.DefaultRecordFormat(), {Format: "opencdc/json", Options: ""}
	RateLimit      *middleware.RateLimit      // destinations; nil: {PerSecond: 0, Burst: 0}, no limit
}

// Factory builds a configured connector of type T from its config struct.
// Make one with [NewSource] or [NewDestination]; the zero value means the
// role is not played.
type Factory[T any] struct {
	params []Parameter
	err    error                                      // a malformed config struct, reported by Serve
	parse  func(raw map[string]string) (any, []error) // a filled config struct
	build  func(config any) (T, error)
}

// Parameters returns the parameters of the connector's own config struct.
func (f Factory[T]) Parameters() []Parameter { return f.params }

// New parses raw into the factory's config struct and builds the
// connector, as Configure does but without the SDK's sdk.* parameters:
// raw may name only the config struct's parameters.
func (f Factory[T]) New(raw map[string]string) (T, error) {
	var zero T
	if err := f.check(); err != nil {
		return zero, err
	}
	cfg, errs := f.parse(raw)
	if errs = append(unknownKeys(raw, f.params), errs...); len(errs) > 0 {
		return zero, invalid(errs)
	}
	return f.make(cfg)
}

// Wrap returns a factory that builds what f builds, wrapped by w: for tests
// that observe a connector's calls or inject faults into them. A wrapper
// should implement Unwrap, returning what it wraps, so that the SDK still
// finds the connector's optional interfaces (acks, batch reads, lifecycle
// hooks).
func (f Factory[T]) Wrap(w func(T) T) Factory[T] {
	if !f.isSet() || f.err != nil {
		return f
	}
	build := f.build
	f.build = func(cfg any) (T, error) {
		t, err := build(cfg)
		if err != nil {
			return t, err
		}
		return w(t), nil
	}
	return f
}

func (f Factory[T]) isSet() bool { return f.parse != nil || f.err != nil }

func (f Factory[T]) check() error {
	if !f.isSet() {
		return errors.New("sdk: this connector does not play this role")
	}
	return f.err
}

// make builds the connector from a parsed config struct.
func (f Factory[T]) make(cfg any) (T, error) {
	t, err := f.build(cfg)
	if err != nil {
		return t, invalid([]error{err})
	}
	return t, nil
}

func invalid(errs []error) error {
	return fmt.Errorf("invalid configuration: %w", errors.Join(errs...))
}

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
	params, err := Parameters(zero)
	if err != nil {
		return Factory[T]{err: err}
	}
	return Factory[T]{
		params: params,
		parse: func(raw map[string]string) (any, []error) {
			var cfg C
			target := reflect.ValueOf(&cfg).Elem()
			return cfg, validate(target, fill(raw, params, target, tagDefaults))
		},
		build: func(cfg any) (T, error) { return build(cfg.(C)) },
	}
}

// allParameters merges a connector's parameters with those of the SDK's
// settings.
func allParameters(own []Parameter, groups ...[]Parameter) ([]Parameter, error) {
	all := slices.Clone(own)
	for _, params := range groups {
		for _, p := range params {
			if slices.ContainsFunc(all, func(q Parameter) bool { return q.Name == p.Name }) {
				return nil, fmt.Errorf("sdk: parameter %q is declared twice: the SDK declares it, and so does the connector", p.Name)
			}
			all = append(all, p)
		}
	}
	slices.SortFunc(all, func(a, b Parameter) int { return strings.Compare(a.Name, b.Name) })
	return all, nil
}
