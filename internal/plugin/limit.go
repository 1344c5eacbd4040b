package plugin

import "context"

type maxRecordSizeKey struct{}

// newMaxRecordSizeContext returns ctx carrying n, the record size limit
// connector code finds with MaxRecordSize.
func newMaxRecordSizeContext(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, maxRecordSizeKey{}, n)
}

// MaxRecordSize returns the record size limit ctx carries, in bytes, or
// DefaultMaxReceiveSize, Conduit's default, if it carries none.
func MaxRecordSize(ctx context.Context) int {
	if n, ok := ctx.Value(maxRecordSizeKey{}).(int); ok && n > 0 {
		return n
	}
	return DefaultMaxReceiveSize
}
