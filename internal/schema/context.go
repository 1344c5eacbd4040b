package schema

import (
	"context"
	"sync"
)

type registryKey struct{}

// NewContext returns a copy of ctx carrying r, for [FromContext].
func NewContext(ctx context.Context, r Registry) context.Context {
	return context.WithValue(ctx, registryKey{}, r)
}

// FromContext returns the registry ctx carries. It never returns nil: when
// ctx carries none (or a nil one), it returns one in-memory registry shared
// by the whole process, so code run outside a plugin, such as a test, still
// has somewhere to register and find schemas.
func FromContext(ctx context.Context) Registry {
	if r, ok := ctx.Value(registryKey{}).(Registry); ok && r != nil {
		return r
	}
	return processRegistry()
}

var processRegistry = sync.OnceValue(func() Registry { return NewInMemory() })
