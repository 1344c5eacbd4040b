package metrics

import "context"

type setKey struct{}

// NewContext returns ctx carrying s, the metrics connector code running
// under it registers its own on.
func NewContext(ctx context.Context, s *Set) context.Context {
	if s == nil {
		return ctx
	}
	return context.WithValue(ctx, setKey{}, s)
}

// FromContext returns the metrics ctx carries, or nil.
func FromContext(ctx context.Context) *Set {
	s, _ := ctx.Value(setKey{}).(*Set)
	return s
}
