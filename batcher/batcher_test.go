package batcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/matryer/is"
)

// recorder is a flush function that records each batch, when it happened
// relative to start, and why.
type recorder struct {
	mu      sync.Mutex
	start   time.Time
	batches []string
	delay   time.Duration // how long each flush takes
	fail    func(batch []int) error
}

func (r *recorder) flush(ctx context.Context, batch []int, why Reason) error {
	if r.delay > 0 {
		time.Sleep(r.delay)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, fmt.Sprintf("%v %s @%v", batch, why, time.Since(r.start)))
	if r.fail != nil {
		return r.fail(batch)
	}
	return nil
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches)
}

func size(n int) int { return n }

// step is one thing a test does: add an item, or let time pass. No step
// adds an item at the very instant a delay runs out: which of the two
// happens first is up to the scheduler.
type step struct {
	add  int
	wait time.Duration
}

func add(items ...int) []step {
	s := make([]step, len(items))
	for i, it := range items {
		s[i] = step{add: it}
	}
	return s
}

func wait(d time.Duration) []step { return []step{{wait: d}} }

func steps(parts ...[]step) []step { return slices.Concat(parts...) }

func TestPolicies(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		steps  []step
		want   []string // batches flushed before the final Close
		close  []string // batches flushed by Close
	}{{
		name:   "no policy: every item alone",
		policy: Policy{},
		steps:  add(1, 2, 3),
		want:   []string{"[1] no policy @0s", "[2] no policy @0s", "[3] no policy @0s"},
	}, {
		name:   "count only",
		policy: Policy{Count: 2},
		steps:  steps(add(1, 2, 3, 4, 5), wait(time.Hour)),
		want:   []string{"[1 2] count @0s", "[3 4] count @0s"},
		close:  []string{"[5] explicit @1h0m0s"}, // a partial batch waits for more, however long
	}, {
		name:   "delay only waits for the delay",
		policy: Policy{Delay: time.Second},
		steps:  steps(add(1), wait(300*time.Millisecond), add(2), wait(time.Second), add(3, 4), wait(2*time.Second)),
		want:   []string{"[1 2] delay @1s", "[3 4] delay @2.3s"},
	}, {
		name:   "bytes only",
		policy: Policy{Bytes: 10},
		steps:  add(4, 4, 4, 10, 1, 30, 2),
		want:   []string{"[4 4] bytes @0s", "[4] bytes @0s", "[10] bytes @0s", "[1] bytes @0s", "[30] bytes @0s"},
		close:  []string{"[2] explicit @0s"}, // an item larger than the limit travels alone
	}, {
		name:   "count and delay: whichever comes first",
		policy: Policy{Count: 3, Delay: time.Second},
		steps:  steps(add(1, 2, 3, 4), wait(1500*time.Millisecond), add(5, 6, 7)),
		want:   []string{"[1 2 3] count @0s", "[4] delay @1s", "[5 6 7] count @1.5s"},
	}, {
		name:   "count and bytes",
		policy: Policy{Count: 3, Bytes: 10},
		steps:  add(1, 1, 1, 5, 5, 5),
		want:   []string{"[1 1 1] count @0s", "[5 5] bytes @0s"},
		close:  []string{"[5] explicit @0s"},
	}, {
		name:   "bytes and delay",
		policy: Policy{Bytes: 10, Delay: time.Second},
		steps:  steps(add(6, 6), wait(time.Second)),
		want:   []string{"[6] bytes @0s", "[6] delay @1s"},
	}, {
		name:   "all three",
		policy: Policy{Count: 4, Bytes: 100, Delay: time.Second},
		steps:  steps(add(1, 2, 3, 4, 90, 20), wait(1500*time.Millisecond), add(1)),
		want:   []string{"[1 2 3 4] count @0s", "[90] bytes @0s", "[20] delay @1s"},
		close:  []string{"[1] explicit @1.5s"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakcheck.Check(t)
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				r := &recorder{start: time.Now()}
				b, err := New(tt.policy, size, r.flush)
				is.NoErr(err)
				for _, s := range tt.steps {
					if s.wait > 0 {
						time.Sleep(s.wait)
						continue
					}
					is.NoErr(b.Add(t.Context(), s.add))
					synctest.Wait()
				}
				synctest.Wait()
				is.Equal(r.got(), tt.want)
				is.NoErr(b.Close(t.Context()))
				is.Equal(r.got(), slices.Concat(tt.want, tt.close))
			})
		})
	}
}

func TestCollectsWhileFlushingAndPushesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		r := &recorder{start: time.Now(), delay: time.Second}
		b, err := New(Policy{Count: 2}, nil, r.flush)
		is.NoErr(err)
		ctx := t.Context()
		is.NoErr(b.Add(ctx, 1))
		is.NoErr(b.Add(ctx, 2)) // complete: the flush starts and takes a second
		is.NoErr(b.Add(ctx, 3))
		is.NoErr(b.Add(ctx, 4)) // the next batch is collected meanwhile
		added := make(chan time.Duration)
		go func() {
			start := time.Now()
			_ = b.Add(ctx, 5) // both batches taken: this one waits
			added <- time.Since(start)
		}()
		is.Equal(<-added, time.Second) // until the first flush returned
		is.NoErr(b.Close(ctx))
		is.Equal(r.got(), []string{"[1 2] count @1s", "[3 4] count @2s", "[5] explicit @3s"})
	})
}

func TestErrorsAreSticky(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		boom := errors.New("boom")
		r := &recorder{start: time.Now(), fail: func(batch []int) error {
			if batch[0] == 3 {
				return boom
			}
			return nil
		}}
		b, err := New(Policy{Count: 2}, nil, r.flush)
		is.NoErr(err)
		ctx := t.Context()
		for i := 1; i <= 4; i++ {
			is.NoErr(b.Add(ctx, i))
		}
		is.Equal(b.Flush(ctx), boom)
		is.Equal(b.Flush(ctx), boom) // twice: the error stays
		is.Equal(b.Add(ctx, 5), boom)
		is.Equal(b.Close(ctx), boom)
		is.Equal(r.got(), []string{"[1 2] count @0s", "[3 4] count @0s"}) // nothing after the failure
	})
}

func TestFlushWaitsAndHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		r := &recorder{start: time.Now(), delay: time.Minute}
		b, err := New(Policy{Count: 10}, nil, r.flush)
		is.NoErr(err)
		is.NoErr(b.Flush(t.Context())) // nothing added: returns at once
		is.NoErr(b.Add(t.Context(), 1))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		is.Equal(b.Flush(ctx), context.DeadlineExceeded) // the flush takes a minute
		is.NoErr(b.Flush(t.Context()))
		is.NoErr(b.Flush(t.Context())) // and again: nothing left
		is.Equal(r.got(), []string{"[1] explicit @1m0s"})
		is.NoErr(b.Close(t.Context()))
		is.NoErr(b.Close(t.Context()))
		is.Equal(b.Add(t.Context(), 2), ErrClosed)
	})
}

func TestCloseGivesUpWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		b, err := New(Policy{}, nil, func(ctx context.Context, _ []int, _ Reason) error {
			<-ctx.Done() // a flush that only ends when cancelled
			return ctx.Err()
		})
		is.NoErr(err)
		is.NoErr(b.Add(t.Context(), 1))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		is.Equal(b.Close(ctx), context.DeadlineExceeded)
	})
}

func TestAddHonoursContextWhileBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		release := make(chan struct{})
		b, err := New(Policy{Count: 1}, nil, func(context.Context, []int, Reason) error { <-release; return nil })
		is.NoErr(err)
		is.NoErr(b.Add(t.Context(), 1))
		is.NoErr(b.Add(t.Context(), 2))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		is.Equal(b.Add(ctx, 3), context.DeadlineExceeded)
		close(release)
		is.NoErr(b.Close(t.Context()))
	})
}

func TestNewRejectsBadPolicies(t *testing.T) {
	flush := func(context.Context, []int, Reason) error { return nil }
	for _, tt := range []struct {
		p    Policy
		size func(int) int
		f    FlushFunc[int]
	}{
		{Policy{Count: -1}, nil, flush},
		{Policy{Delay: -time.Second}, nil, flush},
		{Policy{Bytes: 10}, nil, flush},
		{Policy{}, nil, nil},
	} {
		if _, err := New(tt.p, tt.size, tt.f); err == nil {
			t.Errorf("New(%+v) accepted it", tt.p)
		}
	}
}

// FuzzBatcher checks the contract for random policies, item sizes, pauses
// and flush failures: batches are non-empty, in order, within the limits,
// and nothing is flushed after a failure.
func FuzzBatcher(f *testing.F) {
	f.Add(uint8(3), uint8(10), uint8(5), []byte{1, 2, 3, 200, 4, 0, 5, 6}, uint8(4))
	f.Add(uint8(0), uint8(0), uint8(0), []byte{1, 2, 3}, uint8(0))
	f.Add(uint8(0), uint8(0), uint8(9), []byte{0, 0, 7, 0}, uint8(2))
	f.Fuzz(func(t *testing.T, count, bytes, delay uint8, items []byte, failAt uint8) {
		synctest.Test(t, func(t *testing.T) {
			p := Policy{Count: int(count % 8), Bytes: int(bytes), Delay: time.Duration(delay%16) * time.Millisecond}
			var batches [][]int
			failed := false
			b, err := New(p, func(n int) int { return n % 64 }, func(_ context.Context, batch []int, why Reason) error {
				if failed {
					t.Fatal("flushed after a failure")
				}
				if len(batch) == 0 {
					t.Fatal("empty batch")
				}
				if p.Count > 0 && len(batch) > p.Count {
					t.Fatalf("batch of %d over count %d", len(batch), p.Count)
				}
				total := 0
				for _, it := range batch {
					total += it % 64
				}
				if p.Bytes > 0 && total > p.Bytes && len(batch) > 1 {
					t.Fatalf("batch %v of %d bytes over %d", batch, total, p.Bytes)
				}
				batches = append(batches, slices.Clone(batch))
				if failAt > 0 && len(batches) == int(failAt) {
					failed = true
					return errors.New("fail")
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var added []int
			for i, it := range items {
				if it == 0 { // a zero byte is a pause
					time.Sleep(3 * time.Millisecond)
					continue
				}
				item := i<<6 | int(it)%64 // unique, with a size in its low bits
				if b.Add(t.Context(), item) != nil {
					break
				}
				added = append(added, item)
			}
			_ = b.Close(t.Context())
			flat := slices.Concat(batches...)
			if !failed && !slices.Equal(flat, added) {
				t.Fatalf("flushed %v, added %v", flat, added)
			}
			if failed && !slices.Equal(flat, added[:len(flat)]) {
				t.Fatalf("flushed %v is not a prefix of added %v", flat, added)
			}
		})
	})
}

func BenchmarkAdd(b *testing.B) {
	for _, p := range []Policy{{Count: 1000}, {Count: 1000, Bytes: 1 << 20, Delay: time.Second}} {
		b.Run(fmt.Sprintf("count=%d,bytes=%d,delay=%v", p.Count, p.Bytes, p.Delay), func(b *testing.B) {
			bt, err := New(p, func(int) int { return 100 }, func(context.Context, []int, Reason) error { return nil })
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if err := bt.Add(ctx, i); err != nil {
					b.Fatal(err)
				}
			}
			if err := bt.Close(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// TestCloseReportsALateFlushError: an item added while Close begins is
// flushed on the way out, and its failure is Close's error.
func TestCloseReportsALateFlushError(t *testing.T) {
	boom := errors.New("boom")
	for range 2000 {
		b, err := New(Policy{Count: 10}, nil, func(context.Context, []int, Reason) error { return boom })
		if err != nil {
			t.Fatal(err)
		}
		added := make(chan error, 1)
		go func() { added <- b.Add(context.Background(), 1) }()
		cerr := b.Close(context.Background())
		if aerr := <-added; aerr == nil && cerr == nil {
			t.Fatal("Add accepted the item, its flush failed, and Close returned nil")
		}
	}
}
