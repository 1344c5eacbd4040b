package destination

import "sync/atomic"

// lastDecoded is the metadata value a Write last decoded (postgres.columns,
// postgres.types) and what it decodes to, which is never changed once
// decoded: consecutive records of a table share the value, and so do the
// Writes in flight, which may each replace it.
type lastDecoded[T any] struct {
	last atomic.Pointer[decodedMeta[T]]
}

type decodedMeta[T any] struct {
	meta  string
	value T
}

// decode returns what meta decodes to with decode, without decoding it
// again when it is the value last decoded.
func (l *lastDecoded[T]) decode(meta string, decode func(string) (T, error)) (T, error) {
	if last := l.last.Load(); last != nil && last.meta == meta {
		return last.value, nil
	}
	v, err := decode(meta)
	if err != nil {
		return v, err
	}
	l.last.Store(&decodedMeta[T]{meta, v})
	return v, nil
}
