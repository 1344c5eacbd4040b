package plugin

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/matryer/is"
)

// hourly retries five times an hour apart: a test that waited for one
// would show it.
var hourly = Retry{Attempts: 5, Delay: time.Hour, MaxDelay: time.Hour}

// TestRetryBackoff: waits double from Delay up to MaxDelay, each drawn
// from the upper half of its range; the acks of what was written go out
// before a wait.
func TestRetryBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		w := scripted(t, map[string]string{"b": "retry4"})
		var sentAt []time.Duration
		o := outcomes{write: w.Write, classify: testClassify, log: discard, retry: Retry{Attempts: 4, Delay: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond},
			send: func(a []pconnector.DestinationRunResponseAck) error {
				sentAt = append(sentAt, time.Since(w.start))
				return nil
			}}
		is.NoErr(o.writeAll(t.Context(), records("a", "b", "c")))
		calls := w.got()
		is.Equal(len(calls), 5)
		bounds := []struct{ lo, hi time.Duration }{{50, 100}, {100, 200}, {150, 300}, {150, 300}}
		var prev time.Duration
		for i, call := range calls[1:] {
			at, err := time.ParseDuration(call[strings.Index(call, "@")+1:])
			is.NoErr(err)
			wait := at - prev
			prev = at
			lo, hi := bounds[i].lo*time.Millisecond, bounds[i].hi*time.Millisecond
			if wait < lo || wait > hi {
				t.Errorf("wait %d: %v, want between %v and %v (calls %v)", i+1, wait, lo, hi, calls)
			}
		}
		is.Equal(sentAt[0], time.Duration(0)) // "a" acked before the first wait
		is.Equal(len(sentAt), 2)
	})
}

// TestBackoffBounds: Backoff doubles Delay up to MaxDelay without
// overflowing, and jitter draws from the upper half.
func TestBackoffBounds(t *testing.T) {
	is := is.New(t)
	r := Retry{Delay: 100 * time.Millisecond, MaxDelay: 10 * time.Second}
	is.Equal(r.Backoff(0), 100*time.Millisecond)
	is.Equal(r.Backoff(3), 800*time.Millisecond)
	is.Equal(r.Backoff(7), 10*time.Second)
	is.Equal(r.Backoff(1000), 10*time.Second) // no overflow
	is.Equal(Retry{}.Backoff(5), time.Duration(0))
	is.Equal(Retry{MaxDelay: time.Second}.Backoff(1<<40), time.Duration(0)) // returns at once
	for range 1000 {
		d := jitter(time.Second)
		is.True(d >= 500*time.Millisecond && d <= time.Second)
	}
	is.Equal(jitter(0), time.Duration(0))
	is.Equal(jitter(1), time.Duration(1))
}

// TestRetryEndsPromptly: Stop, Teardown and the end of the context each
// end a backoff at once, and say so in the nacks.
func TestRetryEndsPromptly(t *testing.T) {
	tests := []struct {
		name  string
		end   func(halt *retryHalt, cancel context.CancelFunc)
		calls int    // Writes, all at 0s
		nack  string // what the unwritten records' nacks say
	}{
		{"Stop makes the last attempt at once", func(h *retryHalt, _ context.CancelFunc) { h.Stop() }, 2,
			"not written: retrying ended after 1 retries as the destination was stopped: connection lost at b"},
		{"Teardown ends retries", func(h *retryHalt, _ context.CancelFunc) { h.Abort() }, 1,
			"not written: retrying ended after 0 retries as the destination is torn down: connection lost at b"},
		{"the context ends retries", func(_ *retryHalt, cancel context.CancelFunc) { cancel() }, 1,
			"not written: retrying ended after 0 retries (context canceled): connection lost at b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakcheck.Check(t)
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				halt := newRetryHalt()
				w := scripted(t, map[string]string{"b": "retry"})
				done := make(chan []string)
				go func() {
					done <- writeAllTexts(t, ctx, outcomes{write: w.Write, classify: testClassify, retry: hourly, halt: halt}, records("a", "b", "c"))
				}()
				synctest.Wait() // waiting an hour before the first retry
				tt.end(halt, cancel)
				is.Equal(<-done, []string{"a", "b!" + tt.nack, "c!" + tt.nack})
				is.Equal(len(w.got()), tt.calls)
				for _, c := range w.got() {
					is.True(strings.HasSuffix(c, "@0s")) // no wait ran its course
				}
			})
		})
	}
}

// TestRetryAfterStopRetriesOnceWithoutWaiting: stopped before the
// failure, a Write is retried once at once, which here succeeds.
func TestRetryAfterStopRetriesOnceWithoutWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		halt := newRetryHalt()
		halt.Stop()
		w := scripted(t, map[string]string{"b": "retry1"})
		acks := writeAllTexts(t, t.Context(), outcomes{write: w.Write, classify: testClassify, retry: hourly, halt: halt}, records("a", "b", "c"))
		is.Equal(acks, []string{"a", "b", "c"})
		is.Equal(w.got(), []string{"[a b c]@0s", "[b c]@0s"})
	})
}

// TestDestinationStopEndsRetries: a system failure during the last batch:
// Stop does not wait out the backoff; the records are retried once at
// once and nacked.
func TestDestinationStopEndsRetries(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		w := scripted(t, map[string]string{"2": "retry"})
		r := newDestinationRun(t, openDestination(t, w, batcher.Policy{Count: 3}, hourly)).run()
		r.send(1, 3)
		synctest.Wait()
		is.Equal(r.acks(), []string{"1"}) // acked before the wait
		start := time.Now()
		is.NoErr(r.stop("3"))
		is.Equal(time.Since(start), time.Duration(0))
		nack := "not written: retrying ended after 1 retries as the destination was stopped: connection lost at 2"
		is.Equal(r.acks(), []string{"2!" + nack, "3!" + nack})
		r.end()
	})
}

// TestDestinationTeardownEndsRetriesUnbatched: without batching, too,
// Teardown ends a backoff at once.
func TestDestinationTeardownEndsRetriesUnbatched(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		w := scripted(t, map[string]string{"1": "retry"})
		r := newDestinationRun(t, openDestination(t, w, batcher.Policy{}, hourly)).run()
		r.send(1, 1)
		synctest.Wait()
		torndown := background(func() error {
			_, err := r.d.Teardown(t.Context(), pconnector.DestinationTeardownRequest{})
			return err
		})
		synctest.Wait()
		is.Equal(r.acks(), []string{"1!not written: retrying ended after 0 retries as the destination is torn down: connection lost at 1"})
		r.cancel() // Conduit ends the stream
		is.NoErr(r.wait())
		is.NoErr(<-torndown)
		is.Equal(w.got(), []string{"[1]@0s"})
	})
}
