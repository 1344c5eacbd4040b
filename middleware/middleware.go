package middleware

import (
	"context"

	"github.com/conduitio/conduit-commons/opencdc"
)

// Source has the method set of sdk.Source. It is declared here as well so
// that this package does not depend on sdk; values convert freely.
type Source interface {
	Open(ctx context.Context, from opencdc.Position) error
	Read(ctx context.Context) (opencdc.Record, error)
	Teardown(ctx context.Context) error
}

// Destination has the method set of sdk.Destination.
type Destination interface {
	Open(ctx context.Context) error
	Write(ctx context.Context, records []opencdc.Record) (int, error)
	Teardown(ctx context.Context) error
}

// Middleware wraps a connector of type C, a Source or a Destination. A
// middleware with nothing to do returns its argument unchanged.
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

// Configurable is middleware configured from a connector's configuration.
// Its concrete type is a config struct whose field tags declare the
// parameters it adds to the specification; the SDK parses those parameters
// into a fresh value of that type and asks it for the middleware. Either
// method may return nil when the settings leave nothing to do.
type Configurable interface {
	ForSource() Middleware[Source]
	ForDestination() Middleware[Destination]
}

// Default returns the middleware every connector gets unless it opts out.
func Default() []Configurable { return []Configurable{Batching{}} }

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
