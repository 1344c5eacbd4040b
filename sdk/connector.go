package sdk

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/connkit/connkit/middleware"
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

	// Middleware wraps the source and destination, the first outermost, and
	// adds its parameters to the specification. Nil means
	// middleware.Default(), which brings batching (sdk.batch.*); an empty,
	// non-nil list opts out of all middleware.
	Middleware []middleware.Configurable
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

// New parses raw into the factory's config struct and builds the connector,
// without middleware. Parameters other than the config struct's are errors;
// [Connector.ConfigureSource] and [Connector.ConfigureDestination] accept
// the middleware's too and wrap the connector in it.
func (f Factory[T]) New(raw map[string]string) (T, error) {
	var zero T
	if !f.isSet() {
		return zero, errors.New("sdk: this connector does not play this role")
	}
	if f.err != nil {
		return zero, f.err
	}
	cfg, errs := f.parse(raw)
	if errs = append(unknownKeys(raw, f.params), errs...); len(errs) > 0 {
		return zero, invalid(errs)
	}
	t, err := f.build(cfg)
	if err != nil {
		return zero, invalid([]error{err})
	}
	return t, nil
}

func (f Factory[T]) isSet() bool { return f.parse != nil || f.err != nil }

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
			errs := fill(raw, params, reflect.ValueOf(&cfg).Elem())
			return cfg, errs
		},
		build: func(cfg any) (T, error) { return build(cfg.(C)) },
	}
}

// ConfigureSource builds the connector's source from raw, the configuration
// Conduit sends, wrapped in the connector's middleware: what the plugin
// server does on Configure. Errors name every parameter at fault.
func (c Connector) ConfigureSource(raw map[string]string) (Source, error) {
	return configure(c.Source, c.middleware(), raw, func(m middleware.Configurable, s Source) Source {
		if mw := m.ForSource(); mw != nil {
			return mw(s)
		}
		return s
	})
}

// ConfigureDestination is [Connector.ConfigureSource] for the destination.
func (c Connector) ConfigureDestination(raw map[string]string) (Destination, error) {
	return configure(c.Destination, c.middleware(), raw, func(m middleware.Configurable, d Destination) Destination {
		if mw := m.ForDestination(); mw != nil {
			return mw(d)
		}
		return d
	})
}

func configure[T any](f Factory[T], mws []middleware.Configurable, raw map[string]string, wrap func(middleware.Configurable, T) T) (T, error) {
	var zero T
	if !f.isSet() {
		return zero, errors.New("sdk: this connector does not play this role")
	}
	if f.err != nil {
		return zero, f.err
	}
	all, err := allParameters(f.params, mws)
	if err != nil {
		return zero, err
	}
	cfg, errs := f.parse(raw)
	errs = append(unknownKeys(raw, all), errs...)
	configs := make([]middleware.Configurable, len(mws))
	for i, m := range mws {
		// A fresh value of m's type (or of what it points to), filled from raw.
		t := reflect.TypeOf(m)
		ptr := t.Kind() == reflect.Pointer
		if ptr {
			t = t.Elem()
		}
		v := reflect.New(t)
		params, _ := Parameters(m) // checked by allParameters
		errs = append(errs, fill(raw, params, v.Elem())...)
		if ptr {
			configs[i] = v.Interface().(middleware.Configurable)
		} else {
			configs[i] = v.Elem().Interface().(middleware.Configurable)
		}
	}
	if len(errs) > 0 {
		return zero, invalid(errs) // before building: the connector never sees a bad configuration
	}
	t, err := f.build(cfg)
	if err != nil {
		return zero, invalid([]error{err})
	}
	for i := len(configs) - 1; i >= 0; i-- {
		t = wrap(configs[i], t)
	}
	return t, nil
}

func (c Connector) middleware() []middleware.Configurable {
	if c.Middleware == nil {
		return middleware.Default()
	}
	return c.Middleware
}

// allParameters merges a connector's parameters with its middleware's.
func allParameters(own []Parameter, mws []middleware.Configurable) ([]Parameter, error) {
	all := slices.Clone(own)
	for _, m := range mws {
		params, err := Parameters(m)
		if err != nil {
			return nil, fmt.Errorf("sdk: middleware %T: %w", m, err)
		}
		for _, p := range params {
			if slices.ContainsFunc(all, func(q Parameter) bool { return q.Name == p.Name }) {
				return nil, fmt.Errorf("sdk: middleware %T declares parameter %q, which the connector or other middleware declares too", m, p.Name)
			}
			all = append(all, p)
		}
	}
	slices.SortFunc(all, func(a, b Parameter) int { return strings.Compare(a.Name, b.Name) })
	return all, nil
}
