package sdk

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/connkit/connkit/batcher"
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

	// SourceMiddleware and DestinationMiddleware wrap the source and the
	// destination, the first outermost, and add their parameters to the
	// specification. The field values of each listed settings value are its
	// parameters' defaults, so an author's middleware.Batching{Size: 1000}
	// means batches of 1000 unless a pipeline says otherwise. Nil means
	// middleware.DefaultSource() or middleware.DefaultDestination(), which
	// bring every sdk.* parameter Conduit pipelines use; an empty, non-nil
	// list opts out of all middleware.
	SourceMiddleware      []middleware.SourceSettings
	DestinationMiddleware []middleware.DestinationSettings
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
			target := reflect.ValueOf(&cfg).Elem()
			return cfg, validate(target, fill(raw, params, target))
		},
		build: func(cfg any) (T, error) { return build(cfg.(C)) },
	}
}

// Configured is a connector built from a pipeline's configuration.
type Configured[T any] struct {
	// Connector is the connector wrapped in its middleware.
	Connector T
	// Batching is how the plugin server batches the connector's records:
	// into Writes for a destination, into messages for a source.
	Batching batcher.Policy
	// Retry is how the plugin server retries a destination's Writes that
	// fail with a [Retryable] error; zero (no retries) for a source, or
	// when the destination's middleware has no [middleware.Retry].
	Retry middleware.Retry
}

// ConfigureSource builds the connector's source from raw, the configuration
// Conduit sends, wrapped in the connector's middleware: what the plugin
// server does on Configure. Errors name every parameter at fault.
func (c Connector) ConfigureSource(raw map[string]string) (Configured[Source], error) {
	return c.configureSource(raw, middleware.Env{})
}

func (c Connector) configureSource(raw map[string]string, env middleware.Env) (Configured[Source], error) {
	return configure(c.Source, c.sourceMiddleware(), raw, func(s middleware.SourceSettings) (middleware.Middleware[Source], error) {
		return s.ForSource(env)
	})
}

// ConfigureDestination is [Connector.ConfigureSource] for the destination.
func (c Connector) ConfigureDestination(raw map[string]string) (Configured[Destination], error) {
	return c.configureDestination(raw, middleware.Env{})
}

func (c Connector) configureDestination(raw map[string]string, env middleware.Env) (Configured[Destination], error) {
	return configure(c.Destination, c.destinationMiddleware(), raw, func(s middleware.DestinationSettings) (middleware.Middleware[Destination], error) {
		return s.ForDestination(env)
	})
}

// configure parses raw into the connector's config struct and into a copy
// of each settings value, makes the middleware of every settings value
// whose own parameters parsed, reporting every bad parameter at once, then
// builds the connector and wraps it in the middleware, the first outermost.
func configure[T, S any](f Factory[T], settings []S, raw map[string]string, makeMiddleware func(S) (middleware.Middleware[T], error)) (Configured[T], error) {
	var zero Configured[T]
	if !f.isSet() {
		return zero, errors.New("sdk: this connector does not play this role")
	}
	if f.err != nil {
		return zero, f.err
	}
	all, err := allParameters(f.params, settings)
	if err != nil {
		return zero, err
	}
	cfg, errs := f.parse(raw)
	errs = append(unknownKeys(raw, all), errs...)
	parsed := make([]S, len(settings))
	parsedOK := make([]bool, len(settings))
	for i, s := range settings {
		v := reflect.New(reflect.TypeOf(s)).Elem()
		v.Set(reflect.ValueOf(s))
		target := v
		if target.Kind() == reflect.Pointer {
			// A pointer's settings are parsed into a copy of what it points
			// to; a nil pointer's into a zero value, as its parameters'
			// defaults are then the tags' (see settingsParameters).
			copied := reflect.New(target.Type().Elem())
			if !target.IsNil() {
				copied.Elem().Set(target.Elem())
			}
			v.Set(copied)
			target = copied.Elem()
		}
		params, _ := settingsParameters(s) // checked by allParameters
		fillErrs := fill(raw, params, target)
		errs = append(errs, fillErrs...)
		parsed[i], parsedOK[i] = v.Interface().(S), len(fillErrs) == 0
	}
	// Settings that parsed are judged as a whole even when others did not
	// (sdk.record.format.options against its format, say), so that one
	// error names every parameter at fault.
	mws := make([]middleware.Middleware[T], len(parsed))
	for i, s := range parsed {
		if !parsedOK[i] {
			continue
		}
		mw, err := makeMiddleware(s)
		if err != nil {
			errs = append(errs, err)
		}
		mws[i] = mw
	}
	if len(errs) > 0 {
		return zero, invalid(errs) // before building: the connector never sees a bad configuration
	}
	t, err := f.build(cfg)
	if err != nil {
		return zero, invalid([]error{err})
	}
	out := Configured[T]{Connector: t}
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			out.Connector = mws[i](out.Connector)
		}
	}
	for _, s := range parsed {
		if b, ok := any(s).(interface{ Policy() batcher.Policy }); ok {
			out.Batching = b.Policy()
			break
		}
	}
	for _, s := range parsed {
		if r, ok := any(s).(interface{ RetryPolicy() middleware.Retry }); ok {
			out.Retry = r.RetryPolicy()
			break
		}
	}
	return out, nil
}

func (c Connector) sourceMiddleware() []middleware.SourceSettings {
	if c.SourceMiddleware == nil {
		return middleware.DefaultSource()
	}
	return c.SourceMiddleware
}

func (c Connector) destinationMiddleware() []middleware.DestinationSettings {
	if c.DestinationMiddleware == nil {
		return middleware.DefaultDestination()
	}
	return c.DestinationMiddleware
}

// allParameters merges a connector's parameters with its middleware's.
func allParameters[S any](own []Parameter, settings []S) ([]Parameter, error) {
	all := slices.Clone(own)
	for _, s := range settings {
		params, err := settingsParameters(s)
		if err != nil {
			return nil, fmt.Errorf("sdk: middleware %T: %w", s, err)
		}
		for _, p := range params {
			if slices.ContainsFunc(all, func(q Parameter) bool { return q.Name == p.Name }) {
				return nil, fmt.Errorf("sdk: middleware %T declares parameter %q, which the connector or other middleware declares too", s, p.Name)
			}
			all = append(all, p)
		}
	}
	slices.SortFunc(all, func(a, b Parameter) int { return strings.Compare(a.Name, b.Name) })
	return all, nil
}
