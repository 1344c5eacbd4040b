package sdk

import (
	"context"

	"github.com/connkit/connkit/internal/plugin"
	"github.com/connkit/connkit/middleware"
)

// serverSource resolves what the plugin server runs for src, once: its
// calls, with the optional ones it implements, its reads wrapped in the
// SDK's middleware, and its batching policy.
func serverSource(src Source, p sourcePlan) plugin.Source {
	out := plugin.Source{Open: src.Open, Teardown: src.Teardown, Batch: p.batch, Hooks: hooksOf(src)}
	var read middleware.Read
	if br, ok := find[BatchReader](src); ok {
		read, out.Batched = br.ReadBatch, true
	} else {
		read = func(ctx context.Context, _ int) ([]Record, error) {
			rec, err := src.Read(ctx)
			if err != nil {
				return nil, err
			}
			return []Record{rec}, nil
		}
	}
	if p.encode != nil {
		read = p.encode(read)
	}
	out.Read = read
	if a, ok := find[Acker](src); ok {
		out.Ack = a.Ack
	}
	return out
}

// serverDestination resolves what the plugin server runs for dst, once:
// its calls, its writes wrapped in the SDK's middleware, its batching and
// retry policies, and how its errors are classified.
func serverDestination(dst Destination, p destinationPlan) plugin.Destination {
	write := middleware.Write(dst.Write)
	for _, wrap := range []func(middleware.Write) middleware.Write{p.limit, p.format, p.decode} { // innermost first
		if wrap != nil {
			write = wrap(write)
		}
	}
	return plugin.Destination{
		Open: dst.Open, Write: write, Teardown: dst.Teardown,
		Batch: p.batch, Retry: p.retry, Classify: classify, Hooks: hooksOf(dst),
	}
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
