package sdk

import (
	"cmp"
	"context"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/plugin"
	"github.com/connkit/connkit/middleware"
	"github.com/connkit/connkit/middleware/format"
	"github.com/connkit/connkit/sdk/config"
)

// Plugin returns what a plugin process serves for c, or why c is not
// valid: [Serve] serves it to Conduit; package sdktest serves it inside a
// test's own process, as httptest serves an http.Handler.
func (c Connector) Plugin() (plugin.Connector, error) {
	spec, err := c.Specification()
	if err != nil {
		return plugin.Connector{}, err
	}
	return c.plugin(spec, ""), nil
}

// plugin returns what the plugin server serves for c, whose specification
// is spec, as the connector Conduit knows by connectorID.
func (c Connector) plugin(spec config.Specification, connectorID string) plugin.Connector {
	pc := plugin.Connector{Spec: pconnector.Specification{
		Name: spec.Name, Summary: spec.Summary, Description: spec.Description, Version: spec.Version, Author: spec.Author,
		SourceParams:      config.Conduit(spec.SourceParameters),
		DestinationParams: config.Conduit(spec.DestinationParameters),
	}}
	if c.Source.isSet() {
		pc.NewSource = func(raw map[string]string) (plugin.Source, error) { return c.configureSource(raw, connectorID) }
	}
	if c.Destination.isSet() {
		pc.NewDestination = func(raw map[string]string) (plugin.Destination, error) { return c.configureDestination(raw) }
	}
	return pc
}

// configureSource builds c's source from raw, the configuration Conduit
// sends, and resolves once what the plugin server runs: the source's
// calls, with the optional ones it implements, its reads wrapped in the
// SDK's middleware, and its batching policy. Errors name every parameter
// at fault.
func (c Connector) configureSource(raw map[string]string, connectorID string) (plugin.Source, error) {
	if err := c.Source.check(); err != nil {
		return plugin.Source{}, err
	}
	var s sourceSettings
	src, err := c.Source.build(withDefaults(raw, c.SourceDefaults), &s)
	if err != nil {
		return plugin.Source{}, err
	}
	var subjects middleware.Subjects
	if s.Schema.Key {
		subjects.Key = s.Schema.KeySubject
	}
	if s.Schema.Payload {
		subjects.Payload = s.Schema.PayloadSubject
	}
	if s.Schema.Context {
		subjects.Context = cmp.Or(s.Schema.ContextName, connectorID)
	}
	out := plugin.Source{Open: src.Open, Teardown: src.Teardown, Batch: s.Batch.policy(), Hooks: hooksOf(src)}
	read := func(ctx context.Context, _ int) ([]Record, error) {
		rec, err := src.Read(ctx)
		if err != nil {
			return nil, err
		}
		return []Record{rec}, nil
	}
	if br, ok := find[BatchReader](src); ok {
		read, out.Batched = br.ReadBatch, true
	}
	out.Read = middleware.EncodeSchemas(subjects)(read)
	if a, ok := find[Acker](src); ok {
		out.Ack = a.Ack
	}
	return out, nil
}

// configureDestination is [Connector.configureSource] for the
// destination: its writes are wrapped in the SDK's middleware, and its
// retry policy and the classifier of its errors resolved too.
func (c Connector) configureDestination(raw map[string]string) (plugin.Destination, error) {
	if err := c.Destination.check(); err != nil {
		return plugin.Destination{}, err
	}
	var s destinationSettings
	dst, err := c.Destination.build(withDefaults(raw, c.DestinationDefaults), &s)
	if err != nil {
		return plugin.Destination{}, err
	}
	serializer, err := format.New(s.Record.Format, s.Record.Options) // checked by Validate
	if err != nil {
		return plugin.Destination{}, invalid(err)
	}
	if s.Record.Format == format.OpenCDCJSON {
		serializer = nil // what a record's Bytes returns anyway
	}
	write := middleware.Write(dst.Write)
	write = middleware.LimitRate(s.Rate.PerSecond, s.Rate.Burst)(write)
	write = middleware.FormatRecords(serializer)(write)
	write = middleware.DecodeSchemas(s.Schema.Key, s.Schema.Payload)(write)
	return plugin.Destination{
		Open: dst.Open, Write: write, Teardown: dst.Teardown,
		Batch:    s.Batch.policy(),
		Retry:    plugin.Retry{Attempts: s.Retry.Attempts, Delay: s.Retry.Delay, MaxDelay: s.Retry.MaxDelay},
		Classify: classify, Hooks: hooksOf(dst),
	}, nil
}

// hooksOf returns the lifecycle hooks c implements.
func hooksOf(c any) plugin.Hooks {
	var h plugin.Hooks
	if x, ok := find[CreatedHook](c); ok {
		h.OnCreated = x.OnCreated
	}
	if x, ok := find[UpdatedHook](c); ok {
		h.OnUpdated = x.OnUpdated
	}
	if x, ok := find[DeletedHook](c); ok {
		h.OnDeleted = x.OnDeleted
	}
	return h
}

// find looks for an implementation of T in c and the layers it wraps,
// outermost first, following Unwrap methods that return a Source or a
// Destination.
func find[T any](c any) (T, bool) {
	for c != nil {
		if t, ok := c.(T); ok {
			return t, true
		}
		switch u := c.(type) {
		case interface{ Unwrap() Destination }:
			c = u.Unwrap()
		case interface{ Unwrap() Source }:
			c = u.Unwrap()
		default:
			c = nil
		}
	}
	var zero T
	return zero, false
}
