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

// factory is what the plugin server is handed for a Connector: its
// specification, and how its source and destination are configured, for
// the connector Conduit knows by connectorID.
type factory struct {
	c           Connector
	spec        pconnector.Specification
	connectorID string
}

// factory returns the plugin server's factory of c's roles, whose
// specification spec is, for the connector Conduit knows by connectorID.
func (c Connector) factory(spec config.Specification, connectorID string) factory {
	return factory{c: c, connectorID: connectorID, spec: pconnector.Specification{
		Name: spec.Name, Summary: spec.Summary, Description: spec.Description, Version: spec.Version, Author: spec.Author,
		SourceParams:      config.Conduit(spec.SourceParameters),
		DestinationParams: config.Conduit(spec.DestinationParameters),
	}}
}

func (f factory) Specification() pconnector.Specification { return f.spec }

// ConfigureSource builds the source from raw, the configuration Conduit
// sends, and resolves once what the plugin server runs: the source's
// calls, with the optional ones it implements, its reads wrapped in the
// SDK's middleware, and its batching policy. Errors name every parameter
// at fault.
func (f factory) ConfigureSource(raw map[string]string) (plugin.Source, error) {
	var settings sourceSettings
	src, err := f.c.Source.configure(raw, f.c.SourceDefaults, &settings)
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
	calls.Metrics = settings.Metrics.set(f.labels("source"))
	return plugin.Source{
		Calls:   calls,
		Read:    middleware.EncodeSchemas(settings.subjects(f.connectorID))(read),
		Batched: batched,
		Ack:     ack,
		Batch:   batcher.Policy{Count: settings.Batch.Size, Delay: settings.Batch.Delay, Bytes: settings.Batch.Bytes},
	}, nil
}

// ConfigureDestination is [factory.ConfigureSource] for the destination:
// its writes are wrapped in the SDK's middleware, and its retry policy and
// the classifier of its errors resolved too.
func (f factory) ConfigureDestination(raw map[string]string) (plugin.Destination, error) {
	var settings destinationSettings
	dst, err := f.c.Destination.configure(raw, f.c.DestinationDefaults, &settings)
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
	calls.Metrics = settings.Metrics.set(f.labels("destination"))
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
func (f factory) labels(role string) connmetrics.Labels {
	return connmetrics.Labels{ConnectorID: f.connectorID, Plugin: f.c.Name, Version: f.c.Version, Role: role}
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
