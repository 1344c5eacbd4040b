package schema

import (
	"context"
	"sync"
)

type codecsKey struct{}

// NewContext returns a copy of ctx carrying c, for [FromContext]. A plugin
// puts the codecs of Conduit's schema service in the context of every call.
func NewContext(ctx context.Context, c *Codecs) context.Context {
	return context.WithValue(ctx, codecsKey{}, c)
}

// FromContext returns the codecs ctx carries. It never returns nil: when
// ctx carries none, it returns those of one in-memory registry shared by
// the whole process, so code run outside a plugin, such as a test, still
// has somewhere to register and find schemas.
func FromContext(ctx context.Context) *Codecs {
	if c, ok := ctx.Value(codecsKey{}).(*Codecs); ok && c != nil {
		return c
	}
	return processCodecs()
}

var processCodecs = sync.OnceValue(func() *Codecs { return NewCodecs(NewInMemory()) })
