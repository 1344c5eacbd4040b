package schema

import (
	"context"
	"errors"
	"sync"
)

// flights maps keys to values computed once: concurrent callers asking for a
// missing key share one computation, a success is kept for good and a
// failure is forgotten, so the next caller tries again.
type flights[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]*flight[V]
}

type flight[V any] struct {
	done chan struct{} // closed once v and err are set
	v    V
	err  error
}

var errAbandoned = errors.New("schema: lookup abandoned by a panic")

// get returns the value kept for k, or computes it with fn. Waiting for
// another caller's fn honours ctx; if that fn failed only because its own
// context ended, get tries again with this caller's.
func (f *flights[K, V]) get(ctx context.Context, k K, fn func() (V, error)) (V, error) {
	for {
		f.mu.RLock()
		fl, ok := f.m[k]
		f.mu.RUnlock()
		if !ok {
			f.mu.Lock()
			if fl, ok = f.m[k]; !ok {
				if f.m == nil {
					f.m = make(map[K]*flight[V])
				}
				fl = &flight[V]{done: make(chan struct{})}
				f.m[k] = fl
				f.mu.Unlock()
				f.run(k, fl, fn)
				return fl.v, fl.err
			}
			f.mu.Unlock()
		}
		select {
		case <-fl.done:
		default:
			select {
			case <-fl.done:
			case <-ctx.Done():
				var zero V
				return zero, ctx.Err()
			}
		}
		if fl.err == nil || !isContextError(fl.err) || ctx.Err() != nil {
			return fl.v, fl.err
		}
	}
}

func (f *flights[K, V]) run(k K, fl *flight[V], fn func() (V, error)) {
	fl.err = errAbandoned // stays if fn panics
	defer func() {
		if fl.err != nil {
			f.mu.Lock()
			delete(f.m, k)
			f.mu.Unlock()
		}
		close(fl.done)
	}()
	fl.v, fl.err = fn()
}

// put keeps v for k unless k already has a value or a computation running.
func (f *flights[K, V]) put(k K, v V) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.m[k]; ok {
		return
	}
	if f.m == nil {
		f.m = make(map[K]*flight[V])
	}
	fl := &flight[V]{done: make(chan struct{}), v: v}
	close(fl.done)
	f.m[k] = fl
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
