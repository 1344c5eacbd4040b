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
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/matryer/is"
)

// Writes in flight together: several Writes of a destination that allows
// them run at once, and the records are acked in their order whatever
// order the Writes end in.

// lanes is a destination whose Writes may run together, each taking
// delay(first record), deciding its outcome with outcome; it notes how
// many ran at once at most, every Write's records in the order they
// began, and fails t if two Writes running together share a key when
// byKey is set.
type lanes struct {
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

func (l *lanes) Open(context.Context) error     { return nil }
func (l *lanes) Teardown(context.Context) error { return nil }

func (l *lanes) Write(ctx context.Context, records []opencdc.Record) (int, error) {
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
func (l *lanes) stats() (most, writes int, written []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.most, l.writes, slices.Clone(l.written)
}

// runLanes runs a server of l under the batching policy and c, with
// retries after 100 ms.
func runLanes(t *testing.T, l *lanes, p batcher.Policy, c Concurrency) *destinationRun {
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
		l := &lanes{delay: unevenly}
		r := runLanes(t, l, batcher.Policy{Count: 1}, Concurrency{Max: 4})
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
				l := &lanes{delay: unevenly, outcome: func(batch []opencdc.Record, _ int) (int, error) {
					for i, r := range batch {
						if string(r.Position) == "5" {
							return i, tt.fail
						}
					}
					return len(batch), nil
				}}
				r := runLanes(t, l, batcher.Policy{Count: 2}, Concurrency{Max: 4})
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
		l := &lanes{outcome: func(batch []opencdc.Record, _ int) (int, error) {
			if string(batch[0].Position) == "3" && !failed {
				failed = true
				return 0, retryable("connection reset")
			}
			return len(batch), nil
		}, delay: func([]opencdc.Record) time.Duration { return 10 * time.Millisecond }}
		r := runLanes(t, l, batcher.Policy{Count: 1}, Concurrency{Max: 4})
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
		l := &lanes{byKey: true, delay: unevenly}
		r := runLanes(t, l, batcher.Policy{Count: 2}, Concurrency{Max: 4, ByKey: true})
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
			r := runLanes(t, &lanes{delay: unevenly}, batcher.Policy{Count: 1}, Concurrency{Max: 4})
			r.sendEach(1, 8)
			time.Sleep(5 * time.Millisecond) // four Writes in flight
			is.NoErr(r.stop("8"))
			is.Equal(r.acks(), upTo(8)) // all of them, as Stop returned
			r.end()
		})
	})
	t.Run("Teardown", func(t *testing.T) {
		inBubble(t, func(t *testing.T, is *is.I) {
			r := runLanes(t, &lanes{delay: func([]opencdc.Record) time.Duration { return time.Hour }}, batcher.Policy{Count: 1}, Concurrency{Max: 4})
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
		l := &lanes{delay: func([]opencdc.Record) time.Duration { return 20 * time.Millisecond }}
		r := runLanes(t, l, batcher.Policy{Count: 1}, Concurrency{Max: 16, Adaptive: true})
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
		l := &lanes{delay: func([]opencdc.Record) time.Duration { return 1500 * time.Microsecond }}
		r := runLanes(t, l, batcher.Policy{}, Concurrency{Max: 16, Adaptive: true})
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
		l := &lanes{delay: func([]opencdc.Record) time.Duration { return 20 * time.Millisecond }}
		l.outcome = func(batch []opencdc.Record, active int) (int, error) {
			if active > 4 {
				refused++
				return 0, retryable("429 Too Many Requests")
			}
			return len(batch), nil
		}
		r := runLanes(t, l, batcher.Policy{Count: 1}, Concurrency{Max: 16, Adaptive: true})
		is.Equal(drive(r, 3000), upTo(3000))
		is.Equal(r.finish("3000"), []string(nil))
		most, writes, _ := l.stats()
		is.True(most <= 6)
		if refused*20 >= writes {
			t.Errorf("%d of %d Writes refused, expected under 5%%", refused, writes)
		}
	})
}

// TestAckOrderSendsInJobOrder: jobs that settle out of order have their
// acks sent in job order, each once, a job's acks as soon as every job
// before it is done, and kept acks with the next send.
func TestAckOrderSendsInJobOrder(t *testing.T) {
	is := is.New(t)
	var sent [][]string
	a := newAckOrder(func(acks []pconnector.DestinationRunResponseAck) error {
		sent = append(sent, ackTexts(pconnector.DestinationRunResponse{Acks: acks}))
		return nil
	})
	ack := func(positions ...string) []pconnector.DestinationRunResponseAck {
		var out []pconnector.DestinationRunResponseAck
		for _, p := range positions {
			out = append(out, pconnector.DestinationRunResponseAck{Position: opencdc.Position(p)})
		}
		return out
	}
	is.NoErr(a.settled(2, ack("5", "6")))
	is.NoErr(a.done(2))
	is.NoErr(a.settled(1, ack("3"))) // job 1 settles part of its records...
	is.Equal(len(sent), 0)           // ...and they wait for job 0
	is.NoErr(a.settled(0, ack("1", "2")))
	is.Equal(sent, [][]string{{"1", "2"}}) // the oldest job's acks go at once
	is.NoErr(a.done(0))
	is.Equal(sent, [][]string{{"1", "2"}, {"3"}}) // job 1's settled ones, not job 2's yet
	is.NoErr(a.settled(1, ack("4")))
	is.NoErr(a.done(1))
	is.Equal(sent, [][]string{{"1", "2"}, {"3"}, {"4"}, {"5", "6"}})
	is.Equal(a.through(), 6)

	a.keep(3, ack("7"))
	is.NoErr(a.done(3))
	is.Equal(a.through(), 6) // kept
	is.NoErr(a.settled(4, ack("8")))
	is.Equal(sent[len(sent)-1], []string{"7", "8"}) // with the next send
	is.NoErr(a.done(4))
	a.keep(5, ack("9"))
	is.NoErr(a.done(5))
	is.NoErr(a.flush())
	is.Equal(sent[len(sent)-1], []string{"9"})
	is.Equal(a.through(), 9)
}

// TestLimiterAddsOneAWindowAndTakesATenthOff: an adaptive limit adds one
// after a window of Writes that held their pace while full batches waited
// for most of them, takes a tenth off (at least one) once a window when
// pushed back or when the Writes slow down, and stays within 1 and Max; a
// fixed one never moves.
func TestLimiterAddsOneAWindowAndTakesATenthOff(t *testing.T) {
	is := is.New(t)
	l := newLimiter(Concurrency{Max: 3, Adaptive: true})
	window := func(took time.Duration) {
		for range windowWrites * l.current() {
			l.waited()
			l.started(false)
			l.ended(took, false)
		}
	}
	is.Equal(l.current(), 1)
	window(10 * time.Millisecond)
	is.Equal(l.current(), 2)
	window(10 * time.Millisecond)
	window(10 * time.Millisecond)
	is.Equal(l.current(), 3) // no more than Max
	l.pushed()
	l.pushed() // the same window: one push
	is.Equal(l.current(), 2)
	window(10 * time.Millisecond) // a window pushed back adds nothing
	is.Equal(l.current(), 2)
	window(50 * time.Millisecond) // slower
	is.Equal(l.current(), 1)
	l.pushed()
	is.Equal(l.current(), 1) // at least one

	quiet := newLimiter(Concurrency{Max: 3, Adaptive: true})
	for range windowWrites {
		quiet.started(false)
		quiet.ended(time.Millisecond, false) // no batch waited
	}
	is.Equal(quiet.current(), 1)
	bursts := newLimiter(Concurrency{Max: 3, Adaptive: true})
	for i := range windowWrites {
		if i%3 == 0 { // a burst now and then: a third of the Writes had a batch waiting
			bursts.waited()
			bursts.waited() // noted again before the Write starts: still one
		}
		bursts.started(false)
		bursts.ended(time.Millisecond, false)
	}
	is.Equal(bursts.current(), 1)
	behind := newLimiter(Concurrency{Max: 3, Adaptive: true})
	for range windowWrites {
		behind.started(true) // records wait behind each Write's batch
		behind.ended(time.Millisecond, false)
	}
	is.Equal(behind.current(), 2)

	fixed := newLimiter(Concurrency{Max: 4})
	fixed.pushed()
	fixed.ended(time.Hour, false)
	is.Equal(fixed.current(), 4)
	is.Equal(newLimiter(Concurrency{}).current(), 1)
}

// TestKeptAcksWithWritesInFlight: short Writes whose acks the owner keeps
// while it runs one Write at a time, then several once auto has grown the
// limit, in bursts with pauses between, of several sizes: the kept acks go
// alone, never beside a Write, and every record is acked once, in order.
func TestKeptAcksWithWritesInFlight(t *testing.T) {
	for burst := 2; burst <= 24; burst++ {
		inBubble(t, func(t *testing.T, is *is.I) {
			l := &lanes{delay: func([]opencdc.Record) time.Duration { return 20 * time.Microsecond }}
			r := runLanes(t, l, batcher.Policy{Count: 1}, Concurrency{Max: 16, Adaptive: true})
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				for i := 1; i <= 1000; i++ {
					r.send(i, i)
					if i%burst == 0 && i < 1000 {
						time.Sleep(time.Duration(burst) * 100 * time.Microsecond) // a pause: the kept acks go
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
