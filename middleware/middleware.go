package middleware

import (
	"github.com/connkit/connkit/middleware/format"
	"github.com/connkit/connkit/sdk/schema"
)

// Middleware wraps a connector of type C, a [Source] or a [Destination]. A
// middleware with nothing to do returns its argument unchanged.
//
// A wrapper should implement Unwrap, returning what it wraps (as a Source
// or a Destination), so that the SDK can find the optional interfaces of the
// connector inside: [Acker], [BatchReader] and the lifecycle hooks. The
// outermost layer that implements one is the one called, so a wrapper that
// changes records must implement every method that carries them (Read and
// ReadBatch, or Write).
type Middleware[C any] func(C) C

// Chain composes middleware into one; the first is outermost. Nil entries
// are skipped.
func Chain[C any](outer Middleware[C], others ...Middleware[C]) Middleware[C] {
	all := append([]Middleware[C]{outer}, others...)
	return func(c C) C {
		for i := len(all) - 1; i >= 0; i-- {
			if all[i] != nil {
				c = all[i](c)
			}
		}
		return c
	}
}

// SourceSettings is middleware for sources configured from a pipeline. Its
// concrete type is a struct whose field tags declare the parameters it adds
// to a source's specification (see sdk.ParseConfig); the field values of the
// value a connector lists are those parameters' defaults. The SDK parses a
// copy of that value from the configuration and calls ForSource on it, which
// may return nil when the settings leave nothing to do, or an error naming
// the parameter at fault when settings do not fit together.
type SourceSettings interface {
	ForSource(env Env) (Middleware[Source], error)
}

// DestinationSettings is [SourceSettings] for destinations.
type DestinationSettings interface {
	ForDestination(env Env) (Middleware[Destination], error)
}

// Env is what middleware may take from the plugin it runs in.
type Env struct {
	// Schemas is Conduit's schema service; nil outside a plugin, where the
	// process's in-memory registry serves (see schema.FromContext).
	Schemas schema.Registry
	// ConnectorID is Conduit's ID for the connector; empty outside Conduit.
	ConnectorID string
}

// DefaultSource returns the middleware every source gets unless its
// connector lists its own: batching and schema encoding, with the
// incumbent Conduit SDK's parameters and defaults.
func DefaultSource() []SourceSettings {
	return []SourceSettings{
		Batching{Bytes: DefaultBatchBytes},
		SchemaEncoding{Type: "avro", Payload: true, PayloadSubject: "payload", Key: true, KeySubject: "key", Context: true},
	}
}

// DefaultDestination returns the middleware every destination gets unless
// its connector lists its own: batching, schema decoding, record format and
// rate limit, with the incumbent Conduit SDK's parameters and defaults, and
// retries of failed writes, which the incumbent does not have (see
// [DefaultRetry]).
func DefaultDestination() []DestinationSettings {
	return []DestinationSettings{
		Batching{Bytes: DefaultBatchBytes},
		DefaultRetry(),
		SchemaDecoding{Payload: true, Key: true},
		RecordFormat{Format: format.OpenCDCJSON},
		RateLimit{},
	}
}

// Find looks for an implementation of T in c and the layers it wraps,
// outermost first, following Unwrap methods that return a Source or a
// Destination.
func Find[T any](c any) (T, bool) {
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
