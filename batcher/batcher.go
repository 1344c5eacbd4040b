package batcher

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Policy says when a batch is complete. A zero field sets no limit; a zero
// Policy completes every batch at its first item, which means no batching.
type Policy struct {
	Count int           // items per batch
	Bytes int           // bytes per batch, as measured by the size function
	Delay time.Duration // how long a batch may wait after its first item
}

func (p Policy) validate() error {
	if p.Count < 0 || p.Bytes < 0 || p.Delay < 0 {
		return fmt.Errorf("batcher: policy %+v has a negative limit", p)
	}
	return nil
}

// Reason says why a batch was flushed.
type Reason int

// The reasons a batch is flushed.
const (
	ReasonNone     Reason = iota
	ReasonCount           // it reached Policy.Count items
	ReasonBytes           // it reached Policy.Bytes, or the next item would not fit
	ReasonDelay           // Policy.Delay passed since its first item
	ReasonExplicit        // Flush or Close asked for it
	ReasonNoPolicy        // the zero Policy completes every batch at once
)

func (r Reason) String() string {
	switch r {
	case ReasonCount:
		return "count"
	case ReasonBytes:
		return "bytes"
	case ReasonDelay:
		return "delay"
	case ReasonExplicit:
		return "explicit"
	case ReasonNoPolicy:
		return "no policy"
	}
	return "none"
}

// FlushFunc writes one batch. The batch is only valid during the call: it
// must not be retained. A returned error is sticky: the batcher flushes
// nothing more and every later call returns it.
type FlushFunc[T any] func(ctx context.Context, batch []T, why Reason) error

// ErrClosed is returned by Add after Close.
var ErrClosed = errors.New("batcher: closed")

// Batcher collects items and hands complete batches to a flush function,
// one batch at a time, from a goroutine of its own. While a batch is being
// flushed, Add goes on collecting the next one; once that one is complete
// too, Add blocks until the flush returns, which bounds memory and pushes
// back on the producer. No lock is held while the flush function runs.
type Batcher[T any] struct {
	policy Policy
	size   func(T) int
	flush  FlushFunc[T]
	ctx    context.Context // given to flush; cancelled when Close gives up
	cancel context.CancelFunc

	mu       sync.Mutex
	items    []T
	spare    []T // the last flushed batch's array, reused for the next one
	bytes    int
	deadline time.Time   // when the collecting batch's delay runs out
	timer    *time.Timer // fires at deadline
	complete Reason      // set once the collecting batch must be flushed
	added    uint64      // items ever added
	flushed  uint64      // items whose flush has returned
	err      error
	closed   bool
	waiting  int           // goroutines waiting on changed
	changed  chan struct{} // closed and replaced when state changes, if anyone waits
	wake     chan struct{} // tells the flusher to look again
	done     chan struct{} // closed when the flusher has returned
}

// New starts a batcher that passes batches to flush according to p. size
// measures an item for p.Bytes; it is required when p.Bytes is set.
func New[T any](p Policy, size func(T) int, flush FlushFunc[T]) (*Batcher[T], error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.Bytes > 0 && size == nil {
		return nil, errors.New("batcher: a byte limit needs a size function")
	}
	if flush == nil {
		return nil, errors.New("batcher: no flush function")
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Batcher[T]{
		policy: p, size: size, flush: flush, ctx: ctx, cancel: cancel,
		changed: make(chan struct{}),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	b.timer = time.AfterFunc(time.Hour, b.expire)
	b.timer.Stop()
	go b.run()
	return b, nil
}

// Add adds item to the batch being collected. It blocks while that batch is
// complete and the previous one is still being flushed, until ctx is done.
// It returns the sticky flush error, if any, or ErrClosed after Close.
func (b *Batcher[T]) Add(ctx context.Context, item T) error {
	sz := 0
	if b.policy.Bytes > 0 {
		sz = b.size(item)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		if b.err != nil {
			return b.err
		}
		if b.closed {
			return ErrClosed
		}
		if b.complete == ReasonNone && len(b.items) > 0 && b.policy.Bytes > 0 && b.bytes+sz > b.policy.Bytes {
			b.completeLocked(ReasonBytes) // the item does not fit: it starts the next batch
		}
		if b.complete == ReasonNone {
			break
		}
		if err := b.waitLocked(ctx); err != nil {
			return err
		}
	}
	if b.items == nil {
		b.items, b.spare = b.spare, nil
		if b.items == nil && b.policy.Count > 0 {
			b.items = make([]T, 0, min(b.policy.Count, 1<<16))
		}
	}
	b.items = append(b.items, item)
	b.bytes += sz
	b.added++
	p := b.policy
	switch {
	case p.Count > 0 && len(b.items) >= p.Count:
		b.completeLocked(ReasonCount)
	case p.Bytes > 0 && b.bytes >= p.Bytes:
		b.completeLocked(ReasonBytes)
	case p == (Policy{}):
		b.completeLocked(ReasonNoPolicy)
	case len(b.items) == 1 && p.Delay > 0:
		b.deadline = time.Now().Add(p.Delay)
		b.timer.Reset(p.Delay)
	}
	return nil
}

// expire completes the collecting batch once its delay has run out. It runs
// on the delay timer; a stale firing, for a batch already taken, finds a
// later deadline or none and does nothing.
func (b *Batcher[T]) expire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.complete == ReasonNone && len(b.items) > 0 && !b.deadline.IsZero() && !time.Now().Before(b.deadline) {
		b.completeLocked(ReasonDelay)
	}
}

// completeLocked marks the collecting batch complete and wakes the flusher.
func (b *Batcher[T]) completeLocked(why Reason) {
	b.complete = why
	b.signal()
}

func (b *Batcher[T]) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// broadcastLocked wakes every goroutine waiting for a state change.
func (b *Batcher[T]) broadcastLocked() {
	if b.waiting > 0 {
		close(b.changed)
		b.changed = make(chan struct{})
		b.waiting = 0
	}
}

// waitLocked releases the lock until the state changes or ctx is done.
func (b *Batcher[T]) waitLocked(ctx context.Context) error {
	ch := b.changed
	b.waiting++
	b.mu.Unlock()
	defer b.mu.Lock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Flush completes the batch being collected and returns once every item
// added before the call has been flushed, or ctx is done. It returns the
// sticky flush error, if any. It is safe to call at any time, repeatedly.
func (b *Batcher[T]) Flush(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	target := b.added
	if len(b.items) > 0 && b.complete == ReasonNone {
		b.completeLocked(ReasonExplicit)
	}
	for b.flushed < target && b.err == nil {
		if err := b.waitLocked(ctx); err != nil {
			return err
		}
	}
	return b.err
}

// Close flushes what was added and stops the batcher. If ctx ends first,
// the flush in progress gets a cancelled context (Close then waits for the
// flush function to return) and Close returns ctx's error. It returns the
// sticky flush error, if any. Close is safe to call more than once.
func (b *Batcher[T]) Close(ctx context.Context) error {
	err := b.Flush(ctx)
	b.mu.Lock()
	b.closed = true
	b.broadcastLocked()
	b.signal()
	b.mu.Unlock()
	select {
	case <-b.done:
	case <-ctx.Done():
		b.cancel()
		<-b.done
	}
	b.cancel()
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err != nil:
		return err
	case b.err != nil:
		return b.err // an item added while Close began failed to flush
	case b.flushed < b.added:
		return ctx.Err()
	}
	return nil
}

// run is the flusher: it takes complete batches and flushes them, one at a
// time, without holding the lock.
func (b *Batcher[T]) run() {
	defer close(b.done)
	defer b.timer.Stop()
	for {
		batch, why, ok := b.next()
		if !ok {
			return
		}
		err := b.flush(b.ctx, batch, why)
		b.mu.Lock()
		b.flushed += uint64(len(batch))
		if err != nil && b.err == nil {
			b.err = err
		}
		clear(batch) // let the items be collected
		b.spare = batch[:0]
		b.broadcastLocked()
		b.mu.Unlock()
	}
}

// next waits until the collecting batch is complete and takes it. It
// reports false when the batcher is closed and empty or has failed.
func (b *Batcher[T]) next() ([]T, Reason, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		if b.err != nil {
			return nil, ReasonNone, false
		}
		if len(b.items) > 0 {
			if b.complete == ReasonNone && b.closed {
				b.complete = ReasonExplicit
			}
			if b.complete != ReasonNone {
				batch, why := b.items, b.complete
				b.items, b.bytes, b.deadline, b.complete = nil, 0, time.Time{}, ReasonNone
				b.timer.Stop()
				b.broadcastLocked()
				return batch, why, true
			}
		} else if b.closed {
			return nil, ReasonNone, false
		}
		b.mu.Unlock()
		<-b.wake
		b.mu.Lock()
	}
}
