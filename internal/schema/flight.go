package schema

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// CacheSize is how many entries each cache of this package keeps: [Cached]
// keeps up to CacheSize schemas by subject and version and as many by
// text, [Codecs] as many codecs by version, by shape and last shapes by
// subject. Past that, an entry not used since the cache last looked
// makes room for the new one. A pipeline uses a few schemas at a time;
// the bound caps memory for one that goes through many.
const CacheSize = 1000

// flights maps keys to values computed once: concurrent callers asking for a
// missing key share one computation, a success is kept and a failure is
// forgotten, so the next caller tries again. It keeps at most limit
// entries (CacheSize if 0), evicting with the clock algorithm: a hit only
// marks its entry used, under the read lock, and the insertion that needs
// room sweeps the entries, clearing marks, until it finds one unmarked.
type flights[K comparable, V any] struct {
	limit int

	mu    sync.RWMutex
	m     map[K]*flight[V]
	clock []K   // the keys by slot; slot i is live if m[clock[i]].slot == i
	hand  int   // the next slot to sweep
	free  []int // slots failures left, maybe taken since by the sweep
}

type flight[V any] struct {
	done chan struct{} // closed once v and err are set
	v    V
	err  error
	slot int         // guarded by the flights' mu
	used atomic.Bool // hit since the last sweep
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
		if ok {
			fl.touch()
		} else {
			f.mu.Lock()
			if fl, ok = f.m[k]; !ok {
				fl = &flight[V]{done: make(chan struct{})}
				f.lockedAdd(k, fl)
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
			if f.m[k] == fl {
				delete(f.m, k)
				f.free = append(f.free, fl.slot)
			}
			f.mu.Unlock()
		}
		close(fl.done)
	}()
	fl.v, fl.err = fn()
}

// lookup returns the value kept for k, if one is.
func (f *flights[K, V]) lookup(k K) (v V, ok bool) {
	f.mu.RLock()
	fl, ok := f.m[k]
	f.mu.RUnlock()
	if !ok || !fl.finished() || fl.err != nil {
		return v, false
	}
	fl.touch()
	return fl.v, true
}

// put keeps v for k unless k already has a value or a computation running.
func (f *flights[K, V]) put(k K, v V) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.m[k]; !ok {
		f.lockedAdd(k, settled(v))
	}
}

// set keeps v for k in place of what k had.
func (f *flights[K, V]) set(k K, v V) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lockedAdd(k, settled(v))
}

func settled[V any](v V) *flight[V] {
	fl := &flight[V]{done: make(chan struct{}), v: v}
	close(fl.done)
	return fl
}

// lockedAdd keeps fl for k, in k's slot if it has one, else in a free slot,
// else in the slot of the first entry the clock finds unused since its last
// sweep and not being computed. After two full turns it takes the slot
// under the hand whatever it holds: waiters keep the flight they wait for.
func (f *flights[K, V]) lockedAdd(k K, fl *flight[V]) {
	if f.m == nil {
		f.m = make(map[K]*flight[V])
	}
	if old, ok := f.m[k]; ok {
		fl.slot = old.slot
		f.m[k] = fl
		return
	}
	limit := f.limit
	if limit <= 0 {
		limit = CacheSize
	}
	if len(f.clock) < limit {
		fl.slot = len(f.clock)
		f.clock = append(f.clock, k)
		f.m[k] = fl
		return
	}
	for len(f.free) > 0 {
		i := f.free[len(f.free)-1]
		f.free = f.free[:len(f.free)-1]
		if !f.lockedLive(i) {
			fl.slot = i
			f.clock[i] = k
			f.m[k] = fl
			return
		}
	}
	for swept := 0; ; swept++ {
		i := f.hand
		f.hand = (f.hand + 1) % len(f.clock)
		if f.lockedLive(i) {
			old := f.m[f.clock[i]]
			if swept < 2*len(f.clock) && (old.used.Swap(false) || !old.finished()) {
				continue
			}
			delete(f.m, f.clock[i])
		}
		fl.slot = i
		f.clock[i] = k
		f.m[k] = fl
		return
	}
}

// lockedLive reports whether slot i holds an entry.
func (f *flights[K, V]) lockedLive(i int) bool {
	fl, ok := f.m[f.clock[i]]
	return ok && fl.slot == i
}

// len returns how many entries f keeps.
func (f *flights[K, V]) len() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.m)
}

// touch marks fl used, writing only if it was not, so that concurrent hits
// on a used entry only read it.
func (fl *flight[V]) touch() {
	if !fl.used.Load() {
		fl.used.Store(true)
	}
}

func (fl *flight[V]) finished() bool {
	select {
	case <-fl.done:
		return true
	default:
		return false
	}
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
