package plugin

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/matryer/is"
)

// The destination's Stop, against the real server over the in-memory
// stream. Every test runs in a synctest bubble: "at once" is exactly no
// virtual time, a wait for the batch delay would show as 10s, and each
// Stop gets a deadline a minute away, so that a Stop that hangs fails the
// test with an error instead of hanging it.

// stopPolicy is a batch that never fills in these tests and a delay that,
// if Stop waited for it, would show.
var stopPolicy = batcher.Policy{Count: 10, Delay: 10 * time.Second}

// stopResult is what a Stop returned, and when.
type stopResult struct {
	err error
	at  time.Duration // since the test's start
}

// stopAsync calls Stop with LastPosition last in the background and
// returns where its result arrives.
func stopAsync(t *testing.T, d *destinationServer, start time.Time, last string) <-chan stopResult {
	done := make(chan stopResult, 1)
	go func() {
		done <- stopResult{err: stop(t, d, last), at: time.Since(start)}
	}()
	return done
}

// stop calls Stop with LastPosition last ("": none), with a deadline a
// minute away.
func stop(t *testing.T, d *destinationServer, last string) error {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var pos opencdc.Position
	if last != "" {
		pos = opencdc.Position(last)
	}
	_, err := d.Stop(ctx, pconnector.DestinationStopRequest{LastPosition: pos})
	return err
}

// upTo returns the positions "1" to "n".
func upTo(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i + 1)
	}
	return out
}

// end closes the stream, waits for Run and tears down, and fails the test
// if any ack was sent after the ones drained before.
func end(t *testing.T, d *destinationServer, st destinationStream, cancel context.CancelFunc, runDone <-chan error) {
	t.Helper()
	cancel()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	if _, err := d.Teardown(t.Context(), pconnector.DestinationTeardownRequest{}); err != nil {
		t.Fatal(err)
	}
	if late := drain(st); len(late) > 0 {
		t.Fatalf("acks after Stop returned: %v", late)
	}
}

// stopCase is one Stop test: a destination server with stopPolicy (or
// its own) whose Writes w logs, and its Run once run starts it.
type stopCase struct {
	t       *testing.T
	is      *is.I
	start   time.Time
	w       *writeLog
	d       *destinationServer
	st      destinationStream
	cancel  context.CancelFunc
	runDone <-chan error
}

// stopTest runs body in a synctest bubble, with a goroutine-leak check,
// and ends the Run body started.
func stopTest(t *testing.T, body func(c *stopCase)) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		c := &stopCase{t: t, is: is.New(t), start: time.Now()}
		c.w = &writeLog{t: t, start: c.start}
		c.d = batchedServer(t, stopPolicy, c.w)
		body(c)
		end(t, c.d, c.st, c.cancel, c.runDone)
	})
}

// run starts Run.
func (c *stopCase) run() {
	var ctx context.Context
	ctx, c.cancel = context.WithCancel(c.t.Context())
	c.st, c.runDone = runDestination(ctx, c.d)
}

// send sends records from to to, one message each.
func (c *stopCase) send(from, to int) {
	for i := from; i <= to; i++ {
		c.st.in <- pconnector.DestinationRunRequest{Records: numbered(i, i)}
	}
}

// TestDestinationStopBeforeRun: Conduit sends Stop right behind the
// records it sent, and the Stop can reach the plugin before Run has
// started. Stop waits for Run, which writes what was queued without
// waiting for the batch to fill or for its delay, and returns once the
// last position is acked.
func TestDestinationStopBeforeRun(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		start := time.Now()
		w := &writeLog{t: t, start: start}
		d := batchedServer(t, stopPolicy, w)
		ctx, cancel := context.WithCancel(t.Context())
		// Seven records wait on the stream, one per message.
		st := destinationStream{&stream[pconnector.DestinationRunRequest, pconnector.DestinationRunResponse]{
			ctx: ctx, in: make(chan pconnector.DestinationRunRequest, 7), out: make(chan pconnector.DestinationRunResponse, 1000),
		}}
		for i := 1; i <= 7; i++ {
			st.in <- pconnector.DestinationRunRequest{Records: numbered(i, i)}
		}

		stopped := stopAsync(t, d, start, "7")
		synctest.Wait()
		is.Equal(len(stopped), 0) // waiting for Run: nothing is acked yet

		runDone := make(chan error, 1)
		go func() { runDone <- d.Run(ctx, st) }()
		r := <-stopped
		is.NoErr(r.err)
		is.Equal(r.at, time.Duration(0)) // not after the batch delay
		is.Equal(drain(st), upTo(7))     // every record acked once, in order, before Stop returned
		for _, b := range w.got() {
			is.True(strings.HasSuffix(b, "@0s")) // nothing waited for the delay
		}
		end(t, d, st, cancel, runDone)
	})
}

// TestDestinationStopDuringAWrite: Stop called while a Write blocks
// returns only once that Write's records, and those received meanwhile,
// are acked, each once and in order.
func TestDestinationStopDuringAWrite(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		start := time.Now()
		release := make(chan struct{})
		w := &writeLog{t: t, start: start, outcome: func(r []opencdc.Record) (int, error) {
			if string(r[0].Position) == "1" {
				<-release
			}
			return len(r), nil
		}}
		d := batchedServer(t, batcher.Policy{Count: 3, Delay: 10 * time.Second}, w)
		ctx, cancel := context.WithCancel(t.Context())
		st, runDone := runDestination(ctx, d)
		var once sync.Once
		free := func() { once.Do(func() { close(release) }) }
		t.Cleanup(func() { free(); cancel() }) // a failed check does not leave the write blocked
		st.in <- pconnector.DestinationRunRequest{Records: numbered(1, 3)}
		synctest.Wait()
		is.Equal(w.got(), []string{"[1 2 3]@0s"}) // the write blocks
		st.in <- pconnector.DestinationRunRequest{Records: numbered(4, 4)}
		st.in <- pconnector.DestinationRunRequest{Records: numbered(5, 5)}
		synctest.Wait()

		stopped := stopAsync(t, d, start, "5")
		synctest.Wait()
		is.Equal(len(stopped), 0) // the write still blocks
		is.Equal(len(drain(st)), 0)
		time.Sleep(30 * time.Second) // longer than the delay: still blocked
		synctest.Wait()
		is.Equal(len(stopped), 0)
		is.Equal(len(drain(st)), 0)

		free()
		r := <-stopped
		is.NoErr(r.err)
		is.Equal(r.at, 30*time.Second) // as soon as the write returned
		is.Equal(drain(st), upTo(5))
		is.Equal(w.got(), []string{"[1 2 3]@0s", "[4 5]@30s"})
		end(t, d, st, cancel, runDone)
	})
}

// TestDestinationStopAfterTheLastAck: with every record acked already,
// Stop returns at once.
func TestDestinationStopAfterTheLastAck(t *testing.T) {
	stopTest(t, func(c *stopCase) {
		is := c.is
		c.run()
		c.send(1, 3)
		time.Sleep(stopPolicy.Delay)
		synctest.Wait()
		is.Equal(drain(c.st), upTo(3)) // written after the delay, and acked
		is.Equal(c.w.got(), []string{"[1 2 3]@10s"})

		at := time.Now()
		is.NoErr(stop(c.t, c.d, "3"))
		is.Equal(time.Since(at), time.Duration(0))
		is.Equal(c.w.got(), []string{"[1 2 3]@10s"}) // nothing written again
	})
}

// TestDestinationStopTwice: a second Stop for the same position returns at
// once, and no record is written or acked twice.
func TestDestinationStopTwice(t *testing.T) {
	stopTest(t, func(c *stopCase) {
		is := c.is
		c.run()
		c.send(1, 3)
		synctest.Wait()
		is.Equal(len(c.w.got()), 0) // waiting for the delay

		is.NoErr(stop(c.t, c.d, "3"))
		is.Equal(time.Since(c.start), time.Duration(0))
		is.Equal(drain(c.st), upTo(3))

		is.NoErr(stop(c.t, c.d, "3"))
		is.Equal(time.Since(c.start), time.Duration(0))
		synctest.Wait()
		is.Equal(len(drain(c.st)), 0) // no ack twice
		is.Equal(c.w.got(), []string{"[1 2 3]@0s"})
	})
}

// TestDestinationStopTwiceBeforeRun: two Stops for the same position, both
// before Run, both return once it is acked, and no record is acked twice.
func TestDestinationStopTwiceBeforeRun(t *testing.T) {
	stopTest(t, func(c *stopCase) {
		is := c.is
		first := stopAsync(c.t, c.d, c.start, "3")
		second := stopAsync(c.t, c.d, c.start, "3")
		synctest.Wait()
		is.Equal(len(first)+len(second), 0)

		c.run()
		c.st.in <- pconnector.DestinationRunRequest{Records: numbered(1, 3)}
		for _, stopped := range []<-chan stopResult{first, second} {
			r := <-stopped
			is.NoErr(r.err)
			is.Equal(r.at, time.Duration(0))
		}
		is.Equal(drain(c.st), upTo(3))
		is.Equal(c.w.got(), []string{"[1 2 3]@0s"})
	})
}

// TestDestinationStopWithoutPositionBeforeRun: a Stop without a position
// has nothing to wait for and returns at once, also before Run; the Run
// that follows writes what it receives without waiting for the delay.
func TestDestinationStopWithoutPositionBeforeRun(t *testing.T) {
	stopTest(t, func(c *stopCase) {
		is := c.is
		is.NoErr(stop(c.t, c.d, ""))
		is.Equal(time.Since(c.start), time.Duration(0))

		c.run()
		c.st.in <- pconnector.DestinationRunRequest{Records: numbered(1, 3)}
		synctest.Wait()
		is.Equal(c.w.got(), []string{"[1 2 3]@0s"})
		is.Equal(drain(c.st), upTo(3))
		c.send(4, 4)
		synctest.Wait()
		is.Equal(c.w.got(), []string{"[1 2 3]@0s", "[4]@0s"})
		is.Equal(drain(c.st), []string{"4"})
	})
}

// A Run that fails before it starts its loop (here, on a policy it cannot
// run) still ends, and a Stop waiting for it returns.
func TestDestinationStopAfterRunFailedEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		d := newBatchedDestinationServer(t, &fakeDestination{}, batcher.Policy{Count: -1})
		_, runDone := runDestination(t.Context(), d)
		is.True(<-runDone != nil)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		start := time.Now()
		_, err := d.Stop(ctx, pconnector.DestinationStopRequest{LastPosition: opencdc.Position("1")})
		t.Logf("Stop after a failed Run: err=%v after %v", err, time.Since(start))
		is.NoErr(err)
		is.Equal(time.Since(start), time.Duration(0))
	})
}
