package plugin

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/matryer/is"
)

// Stop and Teardown of both roles, against the real servers over the
// in-memory stream. In a synctest bubble "at once" is exactly no virtual
// time, and a wait for the batch delay would show.

// stopPolicy is a batch that never fills in these tests and a delay that,
// if Stop waited for it, would show as 10s.
var stopPolicy = batcher.Policy{Count: 10, Delay: 10 * time.Second}

// stopTest runs body in a synctest bubble, with a goroutine-leak check,
// on the run of a destination under stopPolicy whose Writes are logged,
// and ends the run after body; body starts Run.
func stopTest(t *testing.T, body func(is *is.I, r *destinationRun)) {
	inBubble(t, func(t *testing.T, is *is.I) {
		r := loggedDestination(t, stopPolicy, &writeLog{})
		body(is, r)
		r.end()
	})
}

// TestDestinationStopWritesWhatIsHeld: Stop writes what the destination
// holds without waiting for a batch to fill or for its delay, and returns
// once the last position is acked: at once, or as soon as the Write in
// flight returns.
func TestDestinationStopWritesWhatIsHeld(t *testing.T) {
	tests := []batchCase{{
		name:   "a partial batch",
		policy: batcher.Policy{Count: 100, Delay: time.Hour},
		sends:  []any{[2]int{1, 3}},
		stop:   []string{"[1 2 3]@0s"},
	}, {
		// The incumbent's destination waits a minute here: its Stop waits
		// for the delay when the last batch was flushed by its size.
		name:   "after a batch written for its size",
		policy: batcher.Policy{Count: 2, Delay: time.Minute},
		sends:  []any{1, 2},
		want:   []string{"[1 2]@0s"},
	}, {
		name:   "while a write is in flight",
		policy: batcher.Policy{Count: 3},
		write:  time.Minute,
		sends:  []any{[2]int{1, 3}},
		want:   []string{"[1 2 3]@0s"},
		took:   time.Minute,
	}, {
		name:  "while a write is in flight, unbatched",
		write: time.Minute,
		sends: []any{1},
		want:  []string{"[1]@0s"},
		took:  time.Minute,
	}}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// TestDestinationStopBeforeRun: Conduit sends Stop right behind the
// records it sent, and the Stop can reach the plugin before Run has
// started. Stop waits for Run, which writes what was queued without
// waiting for the batch to fill or for its delay, and returns once the
// last position is acked.
func TestDestinationStopBeforeRun(t *testing.T) {
	stopTest(t, func(is *is.I, r *destinationRun) {
		r.st.in = make(chan pconnector.DestinationRunRequest, 7)
		r.sendEach(1, 7) // seven records wait on the stream, one per message

		stopped := r.stopAsync("7")
		synctest.Wait()
		is.Equal(len(stopped), 0) // waiting for Run: nothing is acked yet

		r.run()
		res := <-stopped
		is.NoErr(res.err)
		is.Equal(res.at, time.Duration(0)) // not after the batch delay
		is.Equal(r.acks(), upTo(7))        // every record acked once, in order, before Stop returned
		for _, b := range r.log.got() {
			is.True(strings.HasSuffix(b, "@0s")) // nothing waited for the delay
		}
	})
}

// TestDestinationStopDuringAWrite: Stop called while a Write blocks
// returns only once that Write's records, and those received meanwhile,
// are acked, each once and in order.
func TestDestinationStopDuringAWrite(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		release := make(chan struct{})
		r := loggedDestination(t, batcher.Policy{Count: 3, Delay: 10 * time.Second}, &writeLog{outcome: func(batch []opencdc.Record) (int, error) {
			if string(batch[0].Position) == "1" {
				<-release
			}
			return len(batch), nil
		}}).run()
		var once sync.Once
		free := func() { once.Do(func() { close(release) }) }
		t.Cleanup(func() { free(); r.cancel() }) // a failed check does not leave the write blocked
		r.send(1, 3)
		synctest.Wait()
		is.Equal(r.log.got(), []string{"[1 2 3]@0s"}) // the write blocks
		r.sendEach(4, 5)
		synctest.Wait()

		stopped := r.stopAsync("5")
		synctest.Wait()
		is.Equal(len(stopped), 0) // the write still blocks
		is.Equal(len(r.acks()), 0)
		time.Sleep(30 * time.Second) // longer than the delay: still blocked
		synctest.Wait()
		is.Equal(len(stopped), 0)
		is.Equal(len(r.acks()), 0)

		free()
		res := <-stopped
		is.NoErr(res.err)
		is.Equal(res.at, 30*time.Second) // as soon as the write returned
		is.Equal(r.acks(), upTo(5))
		is.Equal(r.log.got(), []string{"[1 2 3]@0s", "[4 5]@30s"})
		r.end()
	})
}

// TestStopFlushesARecordStillInTransit covers Stop arriving before the last
// record has been received from the stream.
func TestStopFlushesARecordStillInTransit(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		r := loggedDestination(t, batcher.Policy{Count: 100}, &writeLog{}).run()
		synctest.Wait() // Run is receiving
		stopped := background(func() error { return r.stop("1") })
		synctest.Wait()
		is.Equal(len(stopped), 0)
		r.send(1, 1)
		is.NoErr(<-stopped)
		is.Equal(r.acks(), []string{"1"})
		r.end()
	})
}

// TestDestinationStopAfterTheLastAck: with every record acked already,
// Stop returns at once.
func TestDestinationStopAfterTheLastAck(t *testing.T) {
	stopTest(t, func(is *is.I, r *destinationRun) {
		r.run()
		r.sendEach(1, 3)
		time.Sleep(stopPolicy.Delay)
		synctest.Wait()
		is.Equal(r.acks(), upTo(3)) // written after the delay, and acked
		is.Equal(r.log.got(), []string{"[1 2 3]@10s"})

		at := time.Now()
		is.NoErr(r.stop("3"))
		is.Equal(time.Since(at), time.Duration(0))
		is.Equal(r.log.got(), []string{"[1 2 3]@10s"}) // nothing written again
	})
}

// TestDestinationStopTwice: a second Stop for the same position returns at
// once, and no record is written or acked twice.
func TestDestinationStopTwice(t *testing.T) {
	stopTest(t, func(is *is.I, r *destinationRun) {
		r.run()
		r.sendEach(1, 3)
		synctest.Wait()
		is.Equal(len(r.log.got()), 0) // waiting for the delay

		is.NoErr(r.stop("3"))
		is.Equal(time.Since(r.start), time.Duration(0))
		is.Equal(r.acks(), upTo(3))

		is.NoErr(r.stop("3"))
		is.Equal(time.Since(r.start), time.Duration(0))
		synctest.Wait()
		is.Equal(len(r.acks()), 0) // no ack twice
		is.Equal(r.log.got(), []string{"[1 2 3]@0s"})
	})
}

// TestDestinationStopTwiceBeforeRun: two Stops for the same position, both
// before Run, both return once it is acked, and no record is acked twice.
func TestDestinationStopTwiceBeforeRun(t *testing.T) {
	stopTest(t, func(is *is.I, r *destinationRun) {
		first, second := r.stopAsync("3"), r.stopAsync("3")
		synctest.Wait()
		is.Equal(len(first)+len(second), 0)

		r.run()
		r.send(1, 3)
		for _, stopped := range []<-chan stopResult{first, second} {
			res := <-stopped
			is.NoErr(res.err)
			is.Equal(res.at, time.Duration(0))
		}
		is.Equal(r.acks(), upTo(3))
		is.Equal(r.log.got(), []string{"[1 2 3]@0s"})
	})
}

// TestDestinationStopWithoutPositionBeforeRun: a Stop without a position
// has nothing to wait for and returns at once, also before Run; the Run
// that follows writes what it receives without waiting for the delay.
func TestDestinationStopWithoutPositionBeforeRun(t *testing.T) {
	stopTest(t, func(is *is.I, r *destinationRun) {
		is.NoErr(r.stop(""))
		is.Equal(time.Since(r.start), time.Duration(0))

		r.run()
		r.send(1, 3)
		synctest.Wait()
		is.Equal(r.log.got(), []string{"[1 2 3]@0s"})
		is.Equal(r.acks(), upTo(3))
		r.send(4, 4)
		synctest.Wait()
		is.Equal(r.log.got(), []string{"[1 2 3]@0s", "[4]@0s"})
		is.Equal(r.acks(), []string{"4"})
	})
}

// TestDestinationStopReturnsWhenRunEnds: a Stop waiting for a position
// that never arrives returns once Conduit closes the stream and Run ends.
func TestDestinationStopReturnsWhenRunEnds(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		r := newDestinationRun(t, openDestination(t, &fakeDestination{}, batcher.Policy{}, Retry{})).run()
		synctest.Wait()
		stopped := background(func() error { return r.stop("never") })
		synctest.Wait()
		is.Equal(len(stopped), 0)
		r.end()
		is.NoErr(<-stopped)
	})
}

// TestDestinationStopAfterRunFailedEarly: a Run that fails before it
// starts its loop (here, on a policy it cannot run) still ends, and a Stop
// waiting for it returns.
func TestDestinationStopAfterRunFailedEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		r := loggedDestination(t, batcher.Policy{Count: -1}, &writeLog{}).run()
		is.True(r.wait() != nil)
		start := time.Now()
		err := r.stop("1")
		t.Logf("Stop after a failed Run: err=%v after %v", err, time.Since(start))
		is.NoErr(err)
		is.Equal(time.Since(start), time.Duration(0))
	})
}

// TestTeardownNeverWaitsOnAPartialBatch: Conduit closes the stream and
// tears down (as the v2 engine does, without Stop) while a batch waits to
// fill: Run and Teardown return at once, and what was never acked is not
// written, since Conduit delivers it again.
func TestTeardownNeverWaitsOnAPartialBatch(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		r := loggedDestination(t, batcher.Policy{Count: 100, Delay: time.Hour}, &writeLog{}).run()
		r.end()
		is.Equal(time.Since(r.start), time.Duration(0))
	})
}

// ctxDestination's Write waits for its context, like a write stuck on a
// lock or a dead connection.
type ctxDestination struct {
	fakeDestination
	started   chan struct{}
	cancelled atomic.Bool
}

func (d *ctxDestination) Write(ctx context.Context, r []opencdc.Record) (int, error) {
	close(d.started)
	<-ctx.Done()
	d.cancelled.Store(true)
	return 0, ctx.Err()
}

// TestTeardownCancelsBatchedWrites: a batched Write still running when
// Conduit closes the stream and tears down gets its context cancelled, so
// Run ends and the connector is torn down.
func TestTeardownCancelsBatchedWrites(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		dst := &ctxDestination{started: make(chan struct{})}
		r := newDestinationRun(t, openDestination(t, dst, batcher.Policy{Count: 1}, Retry{})).run()
		r.send(1, 1)
		<-dst.started
		r.cancel()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := r.d.Teardown(ctx, pconnector.DestinationTeardownRequest{})
		is.NoErr(err)
		is.True(dst.cancelled.Load())
		is.True(dst.torndown)
		is.NoErr(r.wait())
	})
}

// TestSourceStopNeverDiscardsRecords stops a source whose batch is still
// being collected: what was read goes out before Stop returns.
func TestSourceStopNeverDiscardsRecords(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		r := newSourceRun(t, openSource(t, &fakeSource{limit: 3}, batcher.Policy{Count: 100, Delay: time.Hour})).run()
		synctest.Wait()
		is.Equal(len(r.sent()), 0) // collecting: neither full nor due
		last, err := r.stop()
		is.NoErr(err)
		is.Equal(r.sent(), [][]string{{"1", "2", "3"}})
		is.Equal(last, "3")
		r.end()
	})
}

// lateSource returns a record together with the cancellation of its read,
// which the server promises to pass on.
type lateSource struct {
	fakeSource
	n atomic.Int64
}

func (s *lateSource) ReadBatch(ctx context.Context, _ int) ([]opencdc.Record, error) {
	<-ctx.Done()
	return []opencdc.Record{{Position: opencdc.Position(strconv.FormatInt(s.n.Add(1), 10))}}, ctx.Err()
}

// TestStopRightAfterRunStarts: a Stop racing Run's start still sends the
// record it reports as the last one.
func TestStopRightAfterRunStarts(t *testing.T) {
	for range 200 {
		r := newSourceRun(t, openSource(t, &lateSource{}, batcher.Policy{Count: 10})).run()
		for {
			r.s.readMu.Lock()
			started := r.s.stopRead != nil
			r.s.readMu.Unlock()
			if started {
				break
			}
			runtime.Gosched()
		}
		last, err := r.stop()
		if err != nil {
			t.Fatal(err)
		}
		if last != "" && len(r.sent()) == 0 {
			t.Fatalf("Stop returned position %q, which was never sent", last)
		}
		r.end()
	}
}

// TestSourceRunFailingEarly: a Run that fails before reading leaves Stop and
// Teardown working.
func TestSourceRunFailingEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		src := &fakeSource{limit: 1}
		r := newSourceRun(t, openSource(t, src, batcher.Policy{Count: -1})).run() // a policy only possible from code
		is.True(r.wait() != nil)
		_, err := r.stop()
		is.NoErr(err)
		err = r.teardown()
		is.NoErr(err)
		is.True(src.torndown)
	})
}
