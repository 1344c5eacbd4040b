package sdk

import (
	"context"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	connmetrics "github.com/connkit/connkit/internal/metrics"
	"github.com/connkit/connkit/internal/plugin"
	"github.com/connkit/connkit/middleware"
	"github.com/connkit/connkit/sdk/config"
)

func init() {
	plugin.ConnectorOf = func(c any) (plugin.Factory, error) { return c.(Connector).plugin() }
}

// plugin returns what a plugin process serves for c, or why c is not
// valid: [Serve] serves it to Conduit; package sdktest serves it inside a
// test's own process (through plugin.ConnectorOf), as httptest serves an
// http.Handler.
func (c Connector) plugin() (plugin.Factory, error) {
	spec, err := c.Specification()
	if err != nil {
		return nil, err
	}
	return c.served(spec, ""), nil
}

// served is a Connector as the plugin server serves it, to the connector
// Conduit knows by connectorID.
type served struct {
	c           Connector
	spec        pconnector.Specification
	connectorID string
}

func (c Connector) served(spec config.Specification, connectorID string) served {
	return served{c: c, connectorID: connectorID, spec: pconnector.Specification{
		Name: spec.Name, Summary: spec.Summary, Description: spec.Description, Version: spec.Version, Author: spec.Author,
		SourceParams:      config.Conduit(spec.SourceParameters),
		DestinationParams: config.Conduit(spec.DestinationParameters),
	}}
}

func (s served) Specification() pconnector.Specification { return s.spec }

// ConfigureSource builds the source from raw, the configuration Conduit
// sends, and resolves once what the plugin server runs: the source's
// calls, with the optional ones it implements, its reads wrapped in the
// SDK's middleware, and its batching policy. Errors name every parameter
// at fault.
func (s served) ConfigureSource(raw map[string]string) (plugin.Source, error) {
	var settings sourceSettings
	src, err := s.c.Source.configure(raw, s.c.SourceDefaults, &settings)
	if err != nil {
		return plugin.Source{}, err
	}
	read := func(ctx context.Context, _ int) ([]Record, error) {
		rec, err := src.Read(ctx)
		if err != nil {
			return nil, err
		}
		return []Record{rec}, nil
	}
	br, batched := find[BatchReader](src)
	if batched {
		read = br.ReadBatch
	}
	var ack func(context.Context, Position) error
	if a, ok := find[Acker](src); ok {
		ack = a.Ack
	}
	calls := callsOf(src, src.Open, src.Teardown)
	calls.Metrics = settings.Metrics.set(s.labels("source"))
	return plugin.Source{
		Calls:   calls,
		Read:    middleware.EncodeSchemas(settings.subjects(s.connectorID))(read),
		Batched: batched,
		Ack:     ack,
		Batch:   batcher.Policy{Count: settings.Batch.Size, Delay: settings.Batch.Delay, Bytes: settings.Batch.Bytes},
	}, nil
}

// ConfigureDestination is [served.ConfigureSource] for the destination:
// its writes are wrapped in the SDK's middleware, and its retry policy and
// the classifier of its errors resolved too.
func (s served) ConfigureDestination(raw map[string]string) (plugin.Destination, error) {
	var settings destinationSettings
	dst, err := s.c.Destination.configure(raw, s.c.DestinationDefaults, &settings)
	if err != nil {
		return plugin.Destination{}, err
	}
	write := middleware.Write(dst.Write)
	write = middleware.LimitRate(settings.Rate.PerSecond, settings.Rate.Burst)(write)
	write = settings.formatRecords(write)
	write = middleware.DecodeSchemas(settings.Schema.Key, settings.Schema.Payload)(write)
	concurrency, err := settings.concurrency(dst)
	if err != nil {
		return plugin.Destination{}, invalid(err)
	}
	calls := callsOf(dst, func(ctx context.Context, _ Position) error { return dst.Open(ctx) }, dst.Teardown)
	calls.Metrics = settings.Metrics.set(s.labels("destination"))
	return plugin.Destination{
		Calls:       calls,
		Write:       write,
		Batch:       batcher.Policy{Count: settings.Batch.Size, Delay: settings.Batch.Delay, Bytes: settings.Batch.Bytes},
		Retry:       plugin.Retry{Attempts: settings.Retry.Attempts, Delay: settings.Retry.Delay, MaxDelay: settings.Retry.MaxDelay},
		Classify:    classify,
		Concurrency: concurrency,
	}, nil
}

// labels name the connector's instance of role in its metrics.
func (s served) labels(role string) connmetrics.Labels {
	return connmetrics.Labels{ConnectorID: s.connectorID, Plugin: s.c.Name, Version: s.c.Version, Role: role}
}

// callsOf returns the calls the plugin server makes on c, a source or a
// destination: open, teardown and the lifecycle hooks c implements.
func callsOf(c any, open func(context.Context, Position) error, teardown func(context.Context) error) plugin.Calls {
	calls := plugin.Calls{Open: open, Teardown: teardown}
	if x, ok := find[CreatedHook](c); ok {
		calls.OnCreated = x.OnCreated
	}
	if x, ok := find[UpdatedHook](c); ok {
		calls.OnUpdated = x.OnUpdated
	}
	if x, ok := find[DeletedHook](c); ok {
		calls.OnDeleted = x.OnDeleted
	}
	return calls
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

// classify says whose failure a Write error is, for the plugin server.
func classify(err error) plugin.Fault {
	switch {
	case IsRecordFault(err):
		return plugin.RecordFault
	case IsRetryable(err):
		return plugin.Retryable
	}
	return plugin.Unclassified
}
