package batcher

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// arrival is an item that becomes available to the owner at a time, relative
// to the start.
type arrival struct {
	at   time.Duration
	item int
}

func at(d time.Duration, items ...int) []arrival {
	out := make([]arrival, len(items))
	for i, it := range items {
		out[i] = arrival{d, it}
	}
	return out
}

// sim runs the owner loop the plugin server runs, in virtual time and
// without goroutines: it takes items in while there is room, hands a due
// batch to the writer whenever the writer is free, and wakes up when the
// next item comes, the write returns or the delay runs out. Each write
// takes write. It returns the batches written, as "[items]@start", and
// checks the bound on the way.
func sim(t testing.TB, p Policy, h Hold, write time.Duration, arrivals []arrival) []string {
	t.Helper()
	b, err := New(p, h, func(n int) int { return n % 64 })
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(0, 0)
	now := start
	var out []string
	var added []int
	busy, busyUntil := false, time.Time{}
	next := 0
	for steps := 0; ; steps++ {
		if steps > 100000 {
			t.Fatalf("the owner loop does not finish: %d of %d items in, batches %v", next, len(arrivals), out)
		}
		if busy && !now.Before(busyUntil) {
			b.Done()
			busy = false
		}
		for next < len(arrivals) && !now.Before(start.Add(arrivals[next].at)) && b.Room() {
			b.Add(arrivals[next].item, now)
			added = append(added, arrivals[next].item)
			next++
			if c, by := b.Held(); (h.Count > 0 && c > h.Count) || (h.Bytes > 0 && by-arrivals[next-1].item%64 >= h.Bytes) {
				t.Fatalf("held %d items, %d bytes over the bound %+v", c, by, h)
			}
		}
		if _, due := b.Due(now); !busy && due {
			batch := b.Take()
			checkBatch(t, p, batch)
			out = append(out, fmt.Sprintf("%v@%v", batch, now.Sub(start)))
			busy, busyUntil = true, now.Add(write)
			continue
		}
		// Sleep until something happens.
		wake := time.Time{}
		soonest := func(t time.Time) {
			if wake.IsZero() || t.Before(wake) {
				wake = t
			}
		}
		if busy {
			soonest(busyUntil)
		} else if d, ok := b.Wait(now); ok {
			soonest(now.Add(d))
		}
		if next < len(arrivals) && b.Room() {
			soonest(start.Add(arrivals[next].at))
		}
		if wake.IsZero() {
			break // nothing collected, nothing coming
		}
		now = wake
	}
	var written []int
	for _, s := range out {
		for f := range strings.FieldsSeq(strings.Trim(s[:strings.Index(s, "@")], "[]")) {
			var n int
			fmt.Sscan(f, &n)
			written = append(written, n)
		}
	}
	if !slices.Equal(written, added) || len(added) != len(arrivals) {
		t.Fatalf("wrote %v, added %v of %d", written, added, len(arrivals))
	}
	return out
}

func checkBatch(t testing.TB, p Policy, batch []int) {
	t.Helper()
	if len(batch) == 0 {
		t.Fatal("empty batch")
	}
	if p.Count > 0 && len(batch) > p.Count {
		t.Fatalf("batch %v over count %d", batch, p.Count)
	}
	total := 0
	for _, it := range batch {
		total += it % 64
	}
	if p.Bytes > 0 && total > p.Bytes && len(batch) > 1 {
		t.Fatalf("batch %v of %d bytes over %d", batch, total, p.Bytes)
	}
}

func TestGroupCommit(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		policy   Policy
		hold     Hold
		write    time.Duration
		arrivals []arrival
		want     []string
	}{{
		name:     "an idle writer writes a lone item at once",
		policy:   Policy{},
		write:    ms,
		arrivals: slices.Concat(at(0, 1), at(10*ms, 2), at(20*ms, 3)),
		want:     []string{"[1]@0s", "[2]@10ms", "[3]@20ms"},
	}, {
		name:     "a busy writer takes what came during the write",
		policy:   Policy{},
		write:    10 * ms,
		arrivals: slices.Concat(at(0, 1), at(ms, 2, 3, 4), at(5*ms, 5)),
		want:     []string{"[1]@0s", "[2 3 4 5]@10ms"},
	}, {
		name:     "size only: a partial batch goes when the writer is free",
		policy:   Policy{Count: 3},
		write:    10 * ms,
		arrivals: slices.Concat(at(0, 1, 2, 3, 4, 5, 6, 7), at(time.Hour, 8)),
		want:     []string{"[1 2 3]@0s", "[4 5 6]@10ms", "[7]@20ms", "[8]@1h0m0s"},
	}, {
		name:     "bytes only: an item over the limit travels alone",
		policy:   Policy{Bytes: 10},
		write:    ms,
		arrivals: at(0, 4, 4, 4, 10, 1, 30, 2),
		want:     []string{"[4 4]@0s", "[4]@1ms", "[10]@2ms", "[1]@3ms", "[30]@4ms", "[2]@5ms"},
	}, {
		name:     "delay only waits for the oldest item's delay",
		policy:   Policy{Delay: time.Second},
		write:    ms,
		arrivals: slices.Concat(at(0, 1), at(300*ms, 2), at(1300*ms, 3, 4)),
		want:     []string{"[1 2]@1s", "[3 4]@2.3s"},
	}, {
		name:     "delay: a complete batch does not wait",
		policy:   Policy{Count: 3, Delay: time.Second},
		write:    ms,
		arrivals: slices.Concat(at(0, 1, 2, 3, 4), at(1500*ms, 5, 6, 7)),
		want:     []string{"[1 2 3]@0s", "[4]@1s", "[5 6 7]@1.5s"},
	}, {
		name:     "delay: a batch that fills the hold bound does not wait",
		policy:   Policy{Count: 100, Delay: time.Hour},
		hold:     Hold{Count: 4},
		write:    ms,
		arrivals: at(0, 1, 2, 3, 4, 5, 6),
		want:     []string{"[1 2 3 4]@0s", "[5 6]@1h0m0.001s"},
	}, {
		name:     "the hold bound stops taking in until a write returns",
		policy:   Policy{Count: 2},
		hold:     Hold{Count: 4},
		write:    10 * ms,
		arrivals: at(0, 1, 2, 3, 4, 5, 6, 7),
		want:     []string{"[1 2]@0s", "[3 4]@10ms", "[5 6]@20ms", "[7]@30ms"},
	}, {
		name:     "all three",
		policy:   Policy{Count: 4, Bytes: 40, Delay: time.Second},
		write:    ms,
		arrivals: slices.Concat(at(0, 1, 2, 3, 4, 30, 20), at(1500*ms, 1)),
		want:     []string{"[1 2 3 4]@0s", "[30]@1ms", "[20]@1s", "[1]@2.5s"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(sim(t, tt.policy, tt.hold, tt.write, tt.arrivals), tt.want)
		})
	}
}

func TestHoldCountsTakenBatchesUntilDone(t *testing.T) {
	is := is.New(t)
	b, err := New(Policy{Count: 2}, Hold{Count: 3, Bytes: 100}, func(n int) int { return n })
	is.NoErr(err)
	now := time.Now()
	b.Add(10, now)
	b.Add(20, now)
	is.True(b.Room())
	is.Equal(b.Take(), []int{10, 20})
	c, by := b.Held()
	is.Equal(c, 2)
	is.Equal(by, 30)
	b.Add(80, now)
	is.True(!b.Room()) // 110 bytes held
	is.True(b.Complete())
	b.Done()
	is.True(b.Room())
	is.Equal(b.Taken(), 0)
	is.Equal(b.Take(), []int{80})
	is.Equal(b.Take(), nil) // nothing collected
}

func TestTakeReturnsAFreshSlice(t *testing.T) {
	is := is.New(t)
	b, err := New[int](Policy{}, Hold{}, nil)
	is.NoErr(err)
	b.Add(1, time.Now())
	first := b.Take()
	b.Done()
	b.Add(2, time.Now())
	second := b.Take()
	is.Equal(first, []int{1}) // not overwritten by the next batch
	is.Equal(second, []int{2})
}

func TestNewRejectsBadPolicies(t *testing.T) {
	for _, tt := range []struct {
		p    Policy
		h    Hold
		size func(int) int
	}{
		{Policy{Count: -1}, Hold{}, nil},
		{Policy{Delay: -time.Second}, Hold{}, nil},
		{Policy{Bytes: 10}, Hold{}, nil},
		{Policy{}, Hold{Bytes: 10}, nil},
		{Policy{}, Hold{Count: -1}, nil},
	} {
		if _, err := New(tt.p, tt.h, tt.size); err == nil {
			t.Errorf("New(%+v, %+v) accepted it", tt.p, tt.h)
		}
	}
}

// FuzzGroupCommit runs the owner loop for random policies, bounds, write
// times and arrivals, and checks that batches are non-empty, in order and
// within the limits, that the bound holds, and that every item is written:
// no batch waits forever for items that do not come.
func FuzzGroupCommit(f *testing.F) {
	f.Add(uint8(3), uint8(10), uint8(5), uint8(4), uint8(20), uint8(3), []byte{1, 2, 3, 200, 4, 0, 5, 6})
	f.Add(uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), []byte{1, 2, 3})
	f.Add(uint8(0), uint8(0), uint8(9), uint8(1), uint8(0), uint8(7), []byte{0, 0, 7, 0})
	f.Fuzz(func(t *testing.T, count, bytes, delay, holdCount, holdBytes, write uint8, items []byte) {
		p := Policy{Count: int(count % 8), Bytes: int(bytes), Delay: time.Duration(delay%16) * time.Millisecond}
		h := Hold{Count: int(holdCount % 12), Bytes: int(holdBytes)}
		var arrivals []arrival
		var clock time.Duration
		for i, it := range items {
			if it == 0 { // a zero byte is a pause
				clock += 3 * time.Millisecond
				continue
			}
			arrivals = append(arrivals, arrival{clock, i<<6 | int(it)%64})
		}
		sim(t, p, h, time.Duration(write%8)*time.Millisecond, arrivals)
	})
}

func BenchmarkOwnerLoop(b *testing.B) {
	for _, p := range []Policy{{Count: 1000}, {Count: 1000, Bytes: 1 << 20, Delay: time.Second}} {
		b.Run(fmt.Sprintf("count=%d,bytes=%d,delay=%v", p.Count, p.Bytes, p.Delay), func(b *testing.B) {
			bt, err := New(p, Hold{Count: 2000, Bytes: 2 << 20}, func(int) int { return 100 })
			if err != nil {
				b.Fatal(err)
			}
			now := time.Now()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				bt.Add(i, now)
				if bt.Complete() {
					bt.Take()
					bt.Done()
				}
			}
		})
	}
}

// TestAddSizedCountsTheGivenSize: an item added with its size counts as
// Add would count it, without the size function being called.
func TestAddSizedCountsTheGivenSize(t *testing.T) {
	is := is.New(t)
	calls := 0
	b, err := New(Policy{Bytes: 10}, Hold{Bytes: 20}, func(int) int { calls++; return 6 })
	is.NoErr(err)
	now := time.Unix(0, 0)
	b.AddSized(1, 6, now)
	is.True(!b.Complete())
	b.AddSized(2, 6, now)
	is.True(b.Complete()) // 12 bytes, over the batch's 10
	count, bytes := b.Held()
	is.Equal(count, 2)
	is.Equal(bytes, 12)
	is.Equal(calls, 0)
}

// TestDueSaysWhy: a due batch says which limit made it due, the first of
// size, bytes and the hold bound that it reached; otherwise that the
// policy has no delay, or that its oldest item waited the delay.
func TestDueSaysWhy(t *testing.T) {
	start := time.Now()
	tests := []struct {
		name   string
		policy Policy
		hold   Hold
		items  []int // each of its size, all added at start
		at     time.Duration
		why    Reason
		due    bool
	}{
		{"nothing collected", Policy{}, Hold{}, nil, 0, 0, false},
		{"no delay", Policy{Count: 3}, Hold{}, []int{1}, 0, AtOnce, true},
		{"size", Policy{Count: 2, Delay: time.Second}, Hold{}, []int{1, 1}, 0, Size, true},
		{"bytes", Policy{Bytes: 5, Delay: time.Second}, Hold{}, []int{3, 3}, 0, Bytes, true},
		{"size before bytes", Policy{Count: 2, Bytes: 5}, Hold{}, []int{3, 3}, 0, Size, true},
		{"hold bound", Policy{Count: 10, Delay: time.Second}, Hold{Count: 2}, []int{1, 1}, 0, Full, true},
		{"waiting for the delay", Policy{Count: 10, Delay: time.Second}, Hold{}, []int{1}, 999 * time.Millisecond, 0, false},
		{"delay", Policy{Count: 10, Delay: time.Second}, Hold{}, []int{1}, time.Second, Delay, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			b, err := New(tt.policy, tt.hold, func(n int) int { return n })
			is.NoErr(err)
			for _, n := range tt.items {
				b.Add(n, start)
			}
			why, due := b.Due(start.Add(tt.at))
			is.Equal(due, tt.due)
			is.Equal(why, tt.why)
			is.Equal(b.Complete(), tt.why == Size || tt.why == Bytes || tt.why == Full)
		})
	}
}

// TestTakeAtMostTakesFewer: TakeAtMost takes the oldest items, no more
// than it is asked for nor than Take would, and Pending shows what is left
// without taking it.
func TestTakeAtMostTakesFewer(t *testing.T) {
	is := is.New(t)
	b, err := New(Policy{Count: 3}, Hold{}, func(n int) int { return n })
	is.NoErr(err)
	now := time.Now()
	for i := range 5 {
		b.Add(i, now)
	}
	is.Equal(b.TakeAtMost(0), nil)
	is.Equal(b.TakeAtMost(2), []int{0, 1})
	is.Equal(b.Next(), []int{2, 3, 4})
	b.Add(5, now)
	is.Equal(b.TakeAtMost(10), []int{2, 3, 4}) // the policy's Count holds too
	is.Equal(b.Next(), []int{5})
}

// TestSetHoldMovesTheBound: a lower bound leaves what is held held and
// takes no more in until enough is done; a higher one takes more in at
// once; a negative one is refused and changes nothing.
func TestSetHoldMovesTheBound(t *testing.T) {
	is := is.New(t)
	b, err := New[int](Policy{Count: 2}, Hold{Count: 4}, nil)
	is.NoErr(err)
	now := time.Now()
	for i := range 4 {
		b.Add(i, now)
	}
	is.True(!b.Room())
	is.NoErr(b.SetHold(Hold{Count: 6}))
	is.True(b.Room())
	is.NoErr(b.SetHold(Hold{Count: 2}))
	is.True(!b.Room())
	is.Equal(b.Take(), []int{0, 1})
	is.True(!b.Room()) // taken, not done: still held
	b.Done()
	is.True(!b.Room()) // two collected: the bound
	is.True(b.SetHold(Hold{Count: -1}) != nil)
	is.True(!b.Room())
}
