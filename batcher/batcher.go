package batcher

import (
	"errors"
	"fmt"
	"time"
)

// Policy says how large a batch may be and how long an incomplete batch may
// wait to fill. A zero field sets no limit (Delay: no wait).
type Policy struct {
	Count int           // items per batch
	Bytes int           // bytes per batch, as measured by the size function
	Delay time.Duration // how long an incomplete batch may wait after its first item
}

// Hold bounds what a [Batcher] holds: the items collected plus those of the
// batches taken and not yet done. A zero field sets no limit. While the
// bound is reached, [Batcher.Room] reports false: the owner stops taking in
// items, and a batch no longer waits to fill, since nothing more can come.
type Hold struct {
	Count int // items
	Bytes int // bytes, as measured by the size function
}

func (p Policy) validate() error {
	if p.Count < 0 || p.Bytes < 0 || p.Delay < 0 {
		return fmt.Errorf("batcher: policy %+v has a negative limit", p)
	}
	return nil
}

// Batcher is a batching policy's state: the items collected, in order, and
// the batches taken from them and not yet done. It decides what a batch is,
// when one is due and whether more items may come in; it runs nothing by
// itself, keeps no clock and starts no goroutine. One owner calls it (it is
// not safe for concurrent use), passing the time where it matters, so that
// a test or a fuzz target drives it step by step.
//
// The batches it hands out follow group commit: a batch is everything
// collected when it is taken, up to the policy's limits. With no delay a
// batch is due as soon as it has an item, so whoever writes batches takes
// what is there whenever it is free: one item when items are rare, large
// batches when they come faster than they are written. With a delay, an
// incomplete batch is due once its oldest item has waited that long.
type Batcher[T any] struct {
	policy Policy
	hold   Hold
	size   func(T) int

	items   []T         // collected, oldest first, from head on
	sizes   []int       // the size of each item in items
	arrived []time.Time // when each item in items came, with a delay only
	head    int
	bytes   int // of the collected items

	taken      []span // batches taken and not yet done, oldest first
	takenCount int
	takenBytes int
}

type span struct{ count, bytes int }

// New returns a batcher for p that holds no more than h. size measures an
// item for the byte limits; it is required when p.Bytes or h.Bytes is set.
func New[T any](p Policy, h Hold, size func(T) int) (*Batcher[T], error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if h.Count < 0 || h.Bytes < 0 {
		return nil, fmt.Errorf("batcher: hold %+v has a negative limit", h)
	}
	if (p.Bytes > 0 || h.Bytes > 0) && size == nil {
		return nil, errors.New("batcher: a byte limit needs a size function")
	}
	return &Batcher[T]{policy: p, hold: h, size: size}, nil
}

// SetHold changes the hold bound to h from now on: items already held stay
// held. Items are measured for a byte bound only while one is set (or
// Policy.Bytes is), so a byte bound set later counts none of those added
// before it. A negative limit is an error, and leaves the bound as it was.
func (b *Batcher[T]) SetHold(h Hold) error {
	if h.Count < 0 || h.Bytes < 0 {
		return fmt.Errorf("batcher: hold %+v has a negative limit", h)
	}
	b.hold = h
	return nil
}

// Add collects item, which came at now. It accepts items beyond the hold
// bound: checking [Batcher.Room] before taking items in is the owner's part.
func (b *Batcher[T]) Add(item T, now time.Time) {
	sz := 0
	if b.size != nil && (b.policy.Bytes > 0 || b.hold.Bytes > 0) {
		sz = b.size(item)
	}
	b.AddSized(item, sz, now)
}

// AddSized is Add for an item the caller has measured already, with the
// Batcher's size function, so that it is not measured twice.
func (b *Batcher[T]) AddSized(item T, size int, now time.Time) {
	sz := size
	if b.policy.Bytes == 0 && b.hold.Bytes == 0 {
		sz = 0 // as Add, which measures nothing that no limit counts
	}
	b.items = append(b.items, item)
	b.sizes = append(b.sizes, sz)
	if b.policy.Delay > 0 {
		b.arrived = append(b.arrived, now)
	}
	b.bytes += sz
}

// Len returns how many items are collected and not yet taken.
func (b *Batcher[T]) Len() int { return len(b.items) - b.head }

// Bytes returns the bytes of the items collected and not yet taken, as
// the size function measured them; 0 when no byte limit counts them.
func (b *Batcher[T]) Bytes() int { return b.bytes }

// Held returns how many items the batcher holds, collected or taken and not
// done, and their bytes.
func (b *Batcher[T]) Held() (count, bytes int) {
	return b.Len() + b.takenCount, b.bytes + b.takenBytes
}

// Room reports whether the hold bound leaves room for more items. The owner
// takes in more only while it does: that is the backpressure.
func (b *Batcher[T]) Room() bool {
	count, bytes := b.Held()
	return (b.hold.Count == 0 || count < b.hold.Count) && (b.hold.Bytes == 0 || bytes < b.hold.Bytes)
}

// Reason says why a batch is due: which limit it reached, or that the
// policy lets it go as soon as it has an item.
type Reason uint8

const (
	Size   Reason = iota + 1 // it has Policy.Count items
	Bytes                    // it has Policy.Bytes bytes
	Full                     // the hold bound is reached, so nothing more can come
	Delay                    // its oldest item waited Policy.Delay
	AtOnce                   // the policy has no delay: it goes at its first item (group commit)
)

// Complete reports whether r is a limit the batch reached (Size, Bytes or
// Full): one that waits can take no more items.
func (r Reason) Complete() bool { return r == Size || r == Bytes || r == Full }

func (r Reason) String() string {
	switch r {
	case Size:
		return "size"
	case Bytes:
		return "bytes"
	case Full:
		return "full"
	case Delay:
		return "delay"
	case AtOnce:
		return "at once"
	}
	return "not due"
}

// Complete reports whether the next batch is complete: it has Count items,
// or Bytes, or the hold bound is reached so that nothing more can come.
func (b *Batcher[T]) Complete() bool { return b.completed() != 0 }

// completed returns which limit the next batch reached, or 0.
func (b *Batcher[T]) completed() Reason {
	n := b.Len()
	switch {
	case n == 0:
		return 0
	case b.policy.Count > 0 && n >= b.policy.Count:
		return Size
	case b.policy.Bytes > 0 && b.bytes >= b.policy.Bytes:
		return Bytes
	case !b.Room():
		return Full
	}
	return 0
}

// Due reports whether a batch should be taken at now, and why: there is an
// item, and the batch is complete, or the policy has no delay, or its
// oldest item has waited the delay.
func (b *Batcher[T]) Due(now time.Time) (why Reason, due bool) {
	if b.Len() == 0 {
		return 0, false
	}
	if r := b.completed(); r != 0 {
		return r, true
	}
	if b.policy.Delay == 0 {
		return AtOnce, true
	}
	if now.Before(b.arrived[b.head].Add(b.policy.Delay)) {
		return 0, false
	}
	return Delay, true
}

// Wait returns how long after now the next batch becomes due by its delay:
// 0 if it is due, and false if nothing is collected, since then only a new
// item can make a batch due.
func (b *Batcher[T]) Wait(now time.Time) (time.Duration, bool) {
	if b.Len() == 0 {
		return 0, false
	}
	if _, due := b.Due(now); due {
		return 0, true
	}
	return b.arrived[b.head].Add(b.policy.Delay).Sub(now), true
}

// Take removes the next batch and returns it, in a fresh slice: the oldest
// items, as many as the policy's Count and Bytes allow, and at least one (an
// item larger than Bytes travels alone). It takes a batch whether or not it
// is due (Stop and shutdown take batches without waiting) and returns nil
// when nothing is collected. The batch's items stay held until
// [Batcher.Done].
func (b *Batcher[T]) Take() []T { return b.TakeAtMost(b.Len()) }

// TakeAtMost is [Batcher.Take] of at most n items; with n below 1 it takes
// nothing and returns nil.
func (b *Batcher[T]) TakeAtMost(n int) []T {
	n = min(n, b.nextLen())
	if n < 1 {
		return nil
	}
	bytes := 0
	for _, s := range b.sizes[b.head : b.head+n] {
		bytes += s
	}
	batch := make([]T, n)
	copy(batch, b.items[b.head:b.head+n])
	clear(b.items[b.head : b.head+n]) // let the batch's items go once it is done with
	b.head += n
	b.bytes -= bytes
	b.taken = append(b.taken, span{n, bytes})
	b.takenCount += n
	b.takenBytes += bytes
	b.compact()
	return batch
}

// Next returns the items [Batcher.Take] would take now, without taking
// them: the oldest, as many as the policy's Count and Bytes allow. The
// slice is the batcher's own, valid until the next Add or Take; the
// caller must not change it.
func (b *Batcher[T]) Next() []T {
	return b.items[b.head : b.head+b.nextLen() : b.head+b.nextLen()]
}

// nextLen returns how many items the next batch has: the oldest, as many
// as the policy's Count and Bytes allow, and at least one (an item larger
// than Bytes travels alone), or none if nothing is collected.
func (b *Batcher[T]) nextLen() int {
	n := b.Len()
	if n == 0 {
		return 0
	}
	if b.policy.Count > 0 {
		n = min(n, b.policy.Count)
	}
	if b.policy.Bytes > 0 {
		k, bytes := 1, b.sizes[b.head]
		for k < n && bytes+b.sizes[b.head+k] <= b.policy.Bytes {
			bytes += b.sizes[b.head+k]
			k++
		}
		n = k
	}
	return n
}

// compact drops the taken items' slots once they are the larger part.
func (b *Batcher[T]) compact() {
	if b.head == len(b.items) {
		b.items, b.sizes, b.head = b.items[:0], b.sizes[:0], 0
		if b.arrived != nil {
			b.arrived = b.arrived[:0]
		}
		return
	}
	if b.head < 1024 || b.head < len(b.items)/2 {
		return
	}
	n := copy(b.items, b.items[b.head:])
	clear(b.items[n:])
	b.items = b.items[:n]
	b.sizes = b.sizes[:copy(b.sizes, b.sizes[b.head:])]
	if b.arrived != nil {
		b.arrived = b.arrived[:copy(b.arrived, b.arrived[b.head:])]
	}
	b.head = 0
}

// Taken returns how many batches are taken and not yet done.
func (b *Batcher[T]) Taken() int { return len(b.taken) }

// Done releases the oldest batch taken and not yet done: its items no
// longer count against the hold bound. It panics if no batch is taken.
func (b *Batcher[T]) Done() {
	if len(b.taken) == 0 {
		panic("batcher: Done without a batch taken")
	}
	s := b.taken[0]
	b.taken = b.taken[:copy(b.taken, b.taken[1:])]
	b.takenCount -= s.count
	b.takenBytes -= s.bytes
}
