package plugin

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/batcher"
	"github.com/matryer/is"
)

// Writes in flight together: several Writes of a destination that allows
// them run at once, and the records are acked in their order whatever
// order the Writes end in.

// concurrentDest is a destination whose Writes may run together, each taking
// delay(first record), deciding its outcome with outcome; it notes how
// many ran at once at most, every Write's records in the order they
// began, and fails t if two Writes running together share a key when
// byKey is set.
type concurrentDest struct {
	t       *testing.T
	byKey   bool
	delay   func(batch []opencdc.Record) time.Duration
	outcome func(batch []opencdc.Record, active int) (int, error) // nil: all written

	mu      sync.Mutex
	active  map[*[]opencdc.Record]bool
	most    int
	writes  int
	written []string // the positions written, in the order their Writes ended
}

func (l *concurrentDest) Open(context.Context) error     { return nil }
func (l *concurrentDest) Teardown(context.Context) error { return nil }

func (l *concurrentDest) Write(ctx context.Context, records []opencdc.Record) (int, error) {
	l.mu.Lock()
	if l.active == nil {
		l.active = map[*[]opencdc.Record]bool{}
	}
	if l.byKey {
		for other := range l.active {
			for _, a := range *other {
				for _, b := range records {
					if a.Key != nil && b.Key != nil && string(a.Key.Bytes()) == string(b.Key.Bytes()) {
						l.t.Errorf("records %s and %s, of key %s, written at once", a.Position, b.Position, a.Key.Bytes())
					}
				}
			}
		}
	}
	l.active[&records] = true
	l.writes++
	active := len(l.active)
	l.most = max(l.most, active)
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.active, &records)
		l.mu.Unlock()
	}()
	if l.delay != nil {
		select {
		case <-time.After(l.delay(records)):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	l.mu.Lock()
	n, err := len(records), error(nil)
	if l.outcome != nil {
		n, err = l.outcome(records, active)
	}
	for _, r := range records[:max(0, min(n, len(records)))] {
		l.written = append(l.written, string(r.Position))
	}
	l.mu.Unlock()
	return n, err
}

// stats returns the most Writes that ran at once, how many ran, and the
// positions written.
func (l *concurrentDest) stats() (most, writes int, written []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.most, l.writes, slices.Clone(l.written)
}

// runConcurrent runs a server of l under the batching policy and c, with
// retries after 100 ms.
func runConcurrent(t *testing.T, l *concurrentDest, p batcher.Policy, c Concurrency) *destinationRun {
	t.Helper()
	l.t = t
	d := testDestinationServer(func(map[string]string) (Destination, error) {
		dst := destinationOf(l, p, Retry{Attempts: 3, Delay: 100 * time.Millisecond, MaxDelay: 100 * time.Millisecond})
		dst.Concurrency = c
		return dst, nil
	})
	open(t, &d.instance)
	return newDestinationRun(t, d).run()
}

// drive sends records 1 to n, one a message, while it reads their acks,
// as Conduit does, and returns the acks once n came.
func drive(r *destinationRun, n int) []string {
	go r.sendEach(1, n)
	var acks []string
	for len(acks) < n {
		acks = append(acks, ackTexts(<-r.st.out)...)
	}
	return acks
}

// unevenly is a delay under which Writes end out of the order they
// began: record n's Write takes 10 to 40 ms.
func unevenly(batch []opencdc.Record) time.Duration {
	n, _ := strconv.Atoi(string(batch[0].Position))
	return time.Duration(10*(1+(n*7)%4)) * time.Millisecond
}

// TestWritesInFlightAreAckedInOrder: four Writes run at once and end out
// of order; every record is acked once, in record order.
func TestWritesInFlightAreAckedInOrder(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		l := &concurrentDest{delay: unevenly}
		r := runConcurrent(t, l, batcher.Policy{Count: 1}, Concurrency{Max: 4})
		r.sendEach(1, 40)
		acks := r.finish("40")
		is.Equal(acks, upTo(40))
		most, _, written := l.stats()
		is.Equal(most, 4)
		is.True(!slices.Equal(written, upTo(40))) // the Writes did end out of order
	})
}

// TestAFailingWriteAmongOthers: a Write that fails while others run
// settles as it would alone, and the later Writes' records are acked
// after its own, each once.
func TestAFailingWriteAmongOthers(t *testing.T) {
	tests := []struct {
		name string
		fail error
		want []string
	}{
		{"unclassified", fmt.Errorf("disk full"), []string{"5!record at position \"5\": disk full", "6!not attempted: the record at position \"5\" failed: disk full"}},
		{"record fault", fault("bad value"), []string{"5!record at position \"5\": bad value", "6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T, is *is.I) {
				l := &concurrentDest{delay: unevenly, outcome: func(batch []opencdc.Record, _ int) (int, error) {
					for i, r := range batch {
						if string(r.Position) == "5" {
							return i, tt.fail
						}
					}
					return len(batch), nil
				}}
				r := runConcurrent(t, l, batcher.Policy{Count: 2}, Concurrency{Max: 4})
				for i := 1; i < 20; i += 2 {
					r.send(i, i+1) // in pairs, so that 5 and 6 go in one Write
				}
				acks := r.finish("20")
				want := slices.Concat(upTo(4), tt.want, upTo(20)[6:])
				is.Equal(acks, want)
			})
		})
	}
}

// TestARetryHoldsLaterAcks: a Write retried after a retryable error keeps
// the acks of the Writes after it, which end meanwhile, until its records
// are written; none is acked twice.
func TestARetryHoldsLaterAcks(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		failed := false
		l := &concurrentDest{outcome: func(batch []opencdc.Record, _ int) (int, error) {
			if string(batch[0].Position) == "3" && !failed {
				failed = true
				return 0, retryable("connection reset")
			}
			return len(batch), nil
		}, delay: func([]opencdc.Record) time.Duration { return 10 * time.Millisecond }}
		r := runConcurrent(t, l, batcher.Policy{Count: 1}, Concurrency{Max: 4})
		r.sendEach(1, 12)
		acks := r.finish("12")
		is.Equal(acks, upTo(12))
		_, writes, _ := l.stats()
		is.Equal(writes, 13) // record 3's twice
	})
}

// TestKeyedRecordsKeepTheirLane: with ByKey, two Writes that run at once
// never share a key, and each key's records are written in their order.
func TestKeyedRecordsKeepTheirLane(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		l := &concurrentDest{byKey: true, delay: unevenly}
		r := runConcurrent(t, l, batcher.Policy{Count: 2}, Concurrency{Max: 4, ByKey: true})
		const n = 60
		for i := 1; i <= n; i++ {
			rec := opencdc.Record{Position: opencdc.Position(strconv.Itoa(i)), Key: opencdc.RawData("k" + strconv.Itoa(i%5))}
			if i%7 == 0 {
				rec.Key = nil // a record without a key has no lane
			}
			r.sendRecords(rec)
		}
		acks := r.finish(strconv.Itoa(n))
		is.Equal(acks, upTo(n))
		most, _, written := l.stats()
		is.True(most > 1)
		for k := range 5 {
			var got []int
			for _, p := range written {
				if i, _ := strconv.Atoi(p); i%5 == k && i%7 != 0 {
					got = append(got, i)
				}
			}
			is.True(slices.IsSorted(got)) // key k's records in their order
		}
	})
}

// TestStopAndTeardownWithWritesInFlight: Stop returns once every record up
// to its position is acked, with Writes in flight when it is called; a
// Teardown with Writes in flight ends them and Run.
func TestStopAndTeardownWithWritesInFlight(t *testing.T) {
	t.Run("Stop", func(t *testing.T) {
		inBubble(t, func(t *testing.T, is *is.I) {
			r := runConcurrent(t, &concurrentDest{delay: unevenly}, batcher.Policy{Count: 1}, Concurrency{Max: 4})
			r.sendEach(1, 8)
			time.Sleep(5 * time.Millisecond) // four Writes in flight
			is.NoErr(r.stop("8"))
			is.Equal(r.acks(), upTo(8)) // all of them, as Stop returned
			r.end()
		})
	})
	t.Run("Teardown", func(t *testing.T) {
		inBubble(t, func(t *testing.T, is *is.I) {
			r := runConcurrent(t, &concurrentDest{delay: func([]opencdc.Record) time.Duration { return time.Hour }}, batcher.Policy{Count: 1}, Concurrency{Max: 4})
			r.sendEach(1, 8)
			synctest.Wait() // four Writes in flight, for an hour
			err := r.teardown()
			is.NoErr(err)
			is.NoErr(r.wait())
		})
	})
}

// TestAdaptiveConcurrencyClimbs: auto starts at one Write and, while
// Writes take as long as before, keeps adding one.
func TestAdaptiveConcurrencyClimbs(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		l := &concurrentDest{delay: func([]opencdc.Record) time.Duration { return 20 * time.Millisecond }}
		r := runConcurrent(t, l, batcher.Policy{Count: 1}, Concurrency{Max: 16, Adaptive: true})
		is.Equal(drive(r, 3000), upTo(3000))
		is.Equal(r.finish("3000"), []string(nil))
		most, _, _ := l.stats()
		is.True(most >= 12) // climbed most of the way
	})
}

// TestAdaptiveConcurrencyGrowsBatchesFirst: records that come faster
// than one at a Write, but that batches of a few records keep up with, go
// in larger batches of one Write at a time: auto adds Writes only when a
// full batch waits (TestAdaptiveConcurrencyClimbs).
func TestAdaptiveConcurrencyGrowsBatchesFirst(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		l := &concurrentDest{delay: func([]opencdc.Record) time.Duration { return 1500 * time.Microsecond }}
		r := runConcurrent(t, l, batcher.Policy{}, Concurrency{Max: 16, Adaptive: true})
		go func() {
			for i := 1; i <= 1000; i++ {
				if i > 1 {
					time.Sleep(time.Millisecond)
				}
				r.send(i, i)
			}
		}()
		var acks []string
		for len(acks) < 1000 {
			acks = append(acks, ackTexts(<-r.st.out)...)
		}
		is.Equal(acks, upTo(1000))
		is.Equal(r.finish("1000"), []string(nil))
		most, writes, _ := l.stats()
		is.Equal(most, 1)
		is.True(writes < 1000) // in batches
	})
}

// TestAdaptiveConcurrencySettlesUnderPushBack: a destination that refuses
// a fifth Write at once with a retryable error, as a server answering 429
// does: auto settles at about four Writes, and fewer than one Write in 20
// is refused.
func TestAdaptiveConcurrencySettlesUnderPushBack(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		var refused int
		l := &concurrentDest{delay: func([]opencdc.Record) time.Duration { return 20 * time.Millisecond }}
		l.outcome = func(batch []opencdc.Record, active int) (int, error) {
			if active > 4 {
				refused++
				return 0, retryable("429 Too Many Requests")
			}
			return len(batch), nil
		}
		r := runConcurrent(t, l, batcher.Policy{Count: 1}, Concurrency{Max: 16, Adaptive: true})
		is.Equal(drive(r, 3000), upTo(3000))
		is.Equal(r.finish("3000"), []string(nil))
		most, writes, _ := l.stats()
		is.True(most <= 6)
		if refused*20 >= writes {
			t.Errorf("%d of %d Writes refused, expected under 5%%", refused, writes)
		}
	})
}

// sinkWindows drives an adaptive limiter through windows of Writes of 10
// records, as many in flight as the limit allows, against a sink whose
// Write takes took(n) with n in flight, on a clock of its own, and returns
// the limit after each window.
func sinkWindows(l *limiter, windows int, took func(n int) time.Duration) []int {
	var limits []int
	for range windows {
		n := l.current()
		for range windowWrites * n {
			d := took(n)
			sinkClock = sinkClock.Add(d / time.Duration(n)) // n end in each d
			l.ended(10, d, sinkClock, true, false)
		}
		limits = append(limits, l.current())
	}
	return limits
}

// sinkClock is the clock sinkWindows advances.
var sinkClock = time.Unix(0, 0)

// TestLimiterStopsAtTheKnee: against a sink of four workers that queues
// what is beyond them, the limit climbs to four and stays within one of
// it, where more Writes bring no more records but would wait longer; with
// no queue, it climbs to Max.
func TestLimiterStopsAtTheKnee(t *testing.T) {
	is := is.New(t)
	queueing := func(n int) time.Duration { return 20 * time.Millisecond * time.Duration(max(n, 4)) / 4 }
	limits := sinkWindows(newLimiter(Concurrency{Max: 32, Adaptive: true}), 200, queueing)
	is.Equal(limits[:3], []int{2, 3, 4}) // one a window while no Write waits
	for _, n := range limits[3:] {
		if n < 4 || n > 6 {
			t.Fatalf("limits %v: expected 4 to 6 past the knee", limits)
		}
	}
	plain := sinkWindows(newLimiter(Concurrency{Max: 32, Adaptive: true}), 40, func(int) time.Duration { return 20 * time.Millisecond })
	is.Equal(plain[len(plain)-1], 32)
}

// TestLimiterBacksOffASinkThatDegrades: a sink that takes a second for
// one Write in every few once more than two are in flight (a listen
// backlog overflowing) brings the limit back to two, never far above.
func TestLimiterBacksOffASinkThatDegrades(t *testing.T) {
	is := is.New(t)
	l := newLimiter(Concurrency{Max: 32, Adaptive: true})
	i := 0
	limits := sinkWindows(l, 100, func(n int) time.Duration {
		if i++; n > 2 && i%5 == 0 {
			return time.Second
		}
		return 20 * time.Millisecond
	})
	over := 0
	for _, n := range limits {
		is.True(n <= 3)
		if n > 2 {
			over++
		}
	}
	if over*2 > len(limits) {
		t.Errorf("limits %v: above two in more than half of the windows", limits)
	}
}

// TestLimiterLeavesACliff: a sink that serves up to ten connections in
// 20 ms and collapses past them (its listen backlog overflowing, its
// clients waiting a second to try again): then its Writes take 200 ms to
// 1 s, and no more than eight are in flight whatever the limit, as the
// records to write run short. The limit climbs to the cliff, comes down
// to the best limit below it at once, whether the Writes fill the limit
// or not, and tries the cliff again ever more rarely: over 400 windows it
// stays at 8 to 10 but for a few, and delivers at least 0.8x the records
// a second of ten Writes.
func TestLimiterLeavesACliff(t *testing.T) {
	l := newLimiter(Concurrency{Max: 32, Adaptive: true})
	i := 0
	var limits []int
	rate := 0.0
	for range 400 {
		n := l.current()
		inFlight, took := n, func() time.Duration { return 20 * time.Millisecond }
		if n > 10 {
			inFlight, took = min(n, 8), func() time.Duration { i++; return time.Duration(200+800*(i%2)) * time.Millisecond }
		}
		began := sinkClock
		for range windowWrites * n {
			d := took()
			sinkClock = sinkClock.Add(d / time.Duration(inFlight))
			l.ended(10, d, sinkClock, true, false)
		}
		rate += float64(windowWrites*n*10) / sinkClock.Sub(began).Seconds() / 400
		limits = append(limits, l.current())
	}
	off := 0
	for _, n := range limits[20:] {
		if n < 8 || n > 10 {
			off++
		}
	}
	if off > 10 || rate < 0.8*5000 {
		t.Fatalf("limits %v: %d windows off 8 to 10, %.0f records a second, expected at most 10 and at least 4000", limits, off, rate)
	}
}

// TestLimiterKeepsWritesThatPay: against a sink whose Writes all slow
// down as more share it (a database whose Writes contend for two CPUs,
// as the universal scalability law has it: n in flight bring
// n / (1 + 0.3(n−1) + 0.02n(n−1)) as many records a second as one, most
// at six), the limit stays where the last Write still adds a quarter of
// what an average one brings, and delivers at least 1.6x one Write's
// records a second, rather than falling back to one Write whenever the
// Writes take longer than one alone.
func TestLimiterKeepsWritesThatPay(t *testing.T) {
	scale := func(n int) float64 { return float64(n) / (1 + 0.3*float64(n-1) + 0.02*float64(n*(n-1))) }
	contended := func(n int) time.Duration { return time.Duration(float64(n) / scale(n) * float64(20*time.Millisecond)) }
	limits := sinkWindows(newLimiter(Concurrency{Max: 32, Adaptive: true}), 200, contended)
	gain := 0.0
	for _, n := range limits[50:] {
		gain += scale(n) / 150
	}
	if gain < 1.6 || slices.Max(limits) > 6 {
		t.Fatalf("limits %v: %.2fx one Write's records a second, expected at least 1.6x within 6 Writes", limits, gain)
	}
}

// TestLimiterPushBackAndIdle: a retryable error takes a tenth off (at
// least one) once a window, a window pushed back adds nothing, and the
// limit holds for three windows after; Writes that leave the limit unused
// (one in flight a tenth of the time) add nothing either; the limit stays
// within 1 and Max; a fixed one never moves.
func TestLimiterPushBackAndIdle(t *testing.T) {
	is := is.New(t)
	l := newLimiter(Concurrency{Max: 3, Adaptive: true})
	steady := func(int) time.Duration { return 10 * time.Millisecond }
	is.Equal(sinkWindows(l, 3, steady), []int{2, 3, 3}) // no more than Max
	l.pushed()
	l.pushed() // the same window: one push
	is.Equal(l.current(), 2)
	sinkWindows(l, 1, steady)
	is.Equal(l.current(), 2) // a window pushed back adds nothing
	for range 3 {
		l.pushed()
		for range windowWrites * l.current() {
			l.ended(10, 10*time.Millisecond, sinkClock, true, true) // pushed back Writes say nothing of the pace
		}
	}
	is.Equal(l.current(), 1)                                  // at least one
	is.Equal(sinkWindows(l, 5, steady), []int{1, 1, 1, 1, 2}) // the pushed window, then calm for three

	quiet := newLimiter(Concurrency{Max: 3, Adaptive: true})
	at := time.Unix(0, 0)
	for range windowWrites {
		at = at.Add(10 * time.Millisecond)
		quiet.ended(10, time.Millisecond, at, true, false) // a Write in flight a tenth of the time
	}
	is.Equal(quiet.current(), 1)

	fixed := newLimiter(Concurrency{Max: 4})
	fixed.pushed()
	fixed.ended(10, time.Hour, at, true, false)
	is.Equal(fixed.current(), 4)
	is.Equal(newLimiter(Concurrency{}).current(), 1)
}

// TestAcksOfShortWritesInBursts: short Writes, one at a time and then
// several once auto has grown the limit, in bursts with pauses between,
// of several sizes, whose acks become ready while a Send is in flight:
// every record is acked once, in order.
func TestAcksOfShortWritesInBursts(t *testing.T) {
	for burst := 2; burst <= 24; burst++ {
		inBubble(t, func(t *testing.T, is *is.I) {
			l := &concurrentDest{delay: func([]opencdc.Record) time.Duration { return 20 * time.Microsecond }}
			r := runConcurrent(t, l, batcher.Policy{Count: 1}, Concurrency{Max: 16, Adaptive: true})
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				for i := 1; i <= 1000; i++ {
					r.send(i, i)
					if i%burst == 0 && i < 1000 {
						time.Sleep(time.Duration(burst) * 100 * time.Microsecond) // a pause
					}
				}
			}()
			var acks []string
			for len(acks) < 1000 {
				acks = append(acks, ackTexts(<-r.st.out)...)
			}
			<-sent
			is.Equal(acks, upTo(1000))
			is.Equal(r.finish("1000"), []string(nil))
		})
	}
}
