package plugin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/matryer/is"
)

// Errors marked as package sdk's RecordFault and Retryable mark them, and
// one that has the marks' methods but says no; testClassify tells them apart
// as package sdk's classifier tells its own (this package cannot import sdk,
// which imports it).
type (
	faultErr     struct{ error }
	retryableErr struct{ error }
	notReally    struct{ error }
)

func (e faultErr) Unwrap() error     { return e.error }
func (faultErr) RecordFault() bool   { return true }
func (e retryableErr) Unwrap() error { return e.error }
func (retryableErr) Retryable() bool { return true }
func (e notReally) Unwrap() error    { return e.error }
func (notReally) RecordFault() bool  { return false }
func (notReally) Retryable() bool    { return false }

func fault(msg string) error     { return faultErr{errors.New(msg)} }
func retryable(msg string) error { return retryableErr{errors.New(msg)} }

// TestWriteOutcomesFollowTheClassifier: what happens to the records from
// the first one not written on is what the destination's classifier says of
// the error, whatever the error is; without a classifier every error is
// unclassified.
func TestWriteOutcomesFollowTheClassifier(t *testing.T) {
	failB := func(err error) func(context.Context, []opencdc.Record) (int, error) {
		failed := false
		return func(_ context.Context, r []opencdc.Record) (int, error) {
			if string(r[0].Position) == "a" && !failed {
				failed = true
				return 1, err
			}
			return len(r), nil
		}
	}
	always := func(f Fault) func(error) Fault { return func(error) Fault { return f } }
	plain := errors.New("b failed")
	tests := []struct {
		name     string
		err      error
		classify func(error) Fault
		acks     []string
		calls    int
	}{
		{"no classifier: a marked error is unclassified", fault("b failed"), nil,
			[]string{"a", `b!record at position "b": b failed`, `c!not attempted: the record at position "b" failed: b failed`}, 1},
		{"a record fault by the classifier's word", plain, always(RecordFault),
			[]string{"a", `b!record at position "b": b failed`, "c"}, 2},
		{"unclassified by the classifier's word", fault("b failed"), always(Unclassified),
			[]string{"a", `b!record at position "b": b failed`, `c!not attempted: the record at position "b" failed: b failed`}, 1},
		{"retryable by the classifier's word", plain, always(Retryable),
			[]string{"a", "b", "c"}, 2},
		{"the classifier gets the Write's error", fmt.Errorf("context: %w", plain), func(err error) Fault {
			if errors.Is(err, plain) {
				return RecordFault
			}
			return Unclassified
		}, []string{"a", `b!record at position "b": context: b failed`, "c"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				var acks []string
				calls := 0
				write := failB(tt.err)
				err := outcomes{
					write:    func(ctx context.Context, r []opencdc.Record) (int, error) { calls++; return write(ctx, r) },
					retry:    Retry{Attempts: 1, Delay: time.Second, MaxDelay: time.Second},
					classify: tt.classify,
					log:      discard,
					send: func(a []pconnector.DestinationRunResponseAck) error {
						acks = append(acks, ackTexts(pconnector.DestinationRunResponse{Acks: a})...)
						return nil
					},
				}.writeAll(t.Context(), records("a", "b", "c"))
				is.NoErr(err)
				is.Equal(acks, tt.acks)
				is.Equal(calls, tt.calls)
			})
		})
	}
}

// TestTestClassify: the tests' classifier recognises their marks through
// wrapping, lets a record fault win, and takes a mark that says no at its
// word; the tests that count on it would pass for the wrong reason if it
// did not.
func TestTestClassify(t *testing.T) {
	is := is.New(t)
	is.Equal(testClassify(fault("bad")), RecordFault)
	is.Equal(testClassify(retryable("down")), Retryable)
	is.Equal(testClassify(fmt.Errorf("context: %w", fault("bad"))), RecordFault)
	is.Equal(testClassify(fmt.Errorf("context: %w", retryable("down"))), Retryable)
	is.Equal(testClassify(retryableErr{fault("both")}), RecordFault)
	is.Equal(testClassify(notReally{errors.New("no")}), Unclassified)
	is.Equal(testClassify(errors.New("plain")), Unclassified)
	is.Equal(testClassify(nil), Unclassified)
}

// scripted is a destination whose records fail as script says, by
// position: "fault" and "unknown" fail every time, "retry" fails
// retryably, "retryN" the first N times; others are written. It records
// every Write's records and the virtual time it began.
type scripted struct {
	start  time.Time
	script map[string]string
	failed map[string]int // retryable failures so far
	calls  []string       // "[a b c]@100ms"
	before func(call int) // runs before each Write, counting from 1
}

func (s *scripted) write(_ context.Context, records []opencdc.Record) (int, error) {
	if s.failed == nil {
		s.failed = map[string]int{}
	}
	var names []string
	for _, r := range records {
		names = append(names, string(r.Position))
	}
	s.calls = append(s.calls, fmt.Sprintf("%v@%v", names, time.Since(s.start)))
	if s.before != nil {
		s.before(len(s.calls))
	}
	for i, r := range records {
		pos := string(r.Position)
		switch what := s.script[pos]; {
		case what == "fault":
			return i, fault("record " + pos + " is bad")
		case what == "unknown":
			return i, errors.New("record " + pos + " failed")
		case what == "retry":
			return i, retryable("connection lost at " + pos)
		case strings.HasPrefix(what, "retry"):
			times, _ := strconv.Atoi(strings.TrimPrefix(what, "retry"))
			if s.failed[pos] < times {
				s.failed[pos]++
				return i, retryable("connection lost at " + pos)
			}
		}
	}
	return len(records), nil
}

// writeAllTexts runs o.writeAll over records with s's Write and returns
// the acks as ackTexts renders them, and how many ack messages were sent.
func writeAllTexts(ctx context.Context, o outcomes, s *scripted, records []opencdc.Record) (acks []string, messages int) {
	o.write = s.write
	if o.classify == nil {
		o.classify = testClassify
	}
	if o.log == nil {
		o.log = discard
	}
	o.send = func(a []pconnector.DestinationRunResponseAck) error {
		acks = append(acks, ackTexts(pconnector.DestinationRunResponse{Acks: a})...)
		messages++
		return nil
	}
	if err := o.writeAll(ctx, records); err != nil {
		panic(err)
	}
	return acks, messages
}

func TestWriteOutcomes(t *testing.T) {
	noRetry := Retry{}
	threeRetries := Retry{Attempts: 3, Delay: 100 * time.Millisecond, MaxDelay: time.Second}
	tests := []struct {
		name   string
		retry  Retry
		script map[string]string
		acks   []string
		calls  int // Writes
	}{
		{"all written", noRetry, nil, []string{"a", "b", "c", "d"}, 1},
		{"a record fault nacks that record alone", noRetry, map[string]string{"b": "fault"},
			[]string{"a", `b!record at position "b": record b is bad`, "c", "d"}, 2},
		{"record faults in a row", noRetry, map[string]string{"a": "fault", "b": "fault", "d": "fault"},
			[]string{`a!record at position "a": record a is bad`, `b!record at position "b": record b is bad`, "c", `d!record at position "d": record d is bad`}, 3},
		{"an unmarked error nacks the rest, saying why", noRetry, map[string]string{"b": "unknown", "d": "fault"},
			[]string{"a", `b!record at position "b": record b failed`, `c!not attempted: the record at position "b" failed: record b failed`, `d!not attempted: the record at position "b" failed: record b failed`}, 1},
		{"a retryable error is retried", threeRetries, map[string]string{"b": "retry2"}, []string{"a", "b", "c", "d"}, 3},
		{"retries run out", threeRetries, map[string]string{"c": "retry"},
			[]string{"a", "b", "c!not written: the destination still failed after 3 retries: connection lost at c", "d!not written: the destination still failed after 3 retries: connection lost at c"}, 4},
		{"retries off", noRetry, map[string]string{"c": "retry"},
			[]string{"a", "b", "c!not written: the destination failed and retries are off (sdk.retry.attempts is 0): connection lost at c", "d!not written: the destination failed and retries are off (sdk.retry.attempts is 0): connection lost at c"}, 1},
		// Each retry that writes a record starts the count afresh.
		{"progress resets the count", Retry{Attempts: 1}, map[string]string{"a": "retry1", "b": "retry1", "c": "retry1", "d": "retry1"},
			[]string{"a", "b", "c", "d"}, 5},
		{"a fault after a retry", threeRetries, map[string]string{"a": "retry1", "c": "fault"},
			[]string{"a", "b", `c!record at position "c": record c is bad`, "d"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				s := &scripted{start: time.Now(), script: tt.script}
				acks, _ := writeAllTexts(t.Context(), outcomes{retry: tt.retry}, s, records("a", "b", "c", "d"))
				is.Equal(acks, tt.acks)
				is.Equal(len(s.calls), tt.calls)
			})
		})
	}
}

func TestWriteOutcomesContract(t *testing.T) {
	// What settle checks still holds, also on a Write after a record fault.
	tests := []struct {
		name  string
		write func(call int, records []opencdc.Record) (int, error)
		acks  []string
	}{
		{"short write without an error after a fault", func(call int, r []opencdc.Record) (int, error) {
			if call == 1 {
				return 1, fault("b is bad")
			}
			return 0, nil
		}, []string{"a", `b!record at position "b": b is bad`, "c!destination broke the Write contract: wrote 0 of 2 records but returned no error", "d!destination broke the Write contract: wrote 0 of 2 records but returned no error"}},
		{"n too large after a fault", func(call int, r []opencdc.Record) (int, error) {
			if call == 1 {
				return 0, fault("a is bad")
			}
			return 7, nil
		}, []string{`a!record at position "a": a is bad`, "b!destination broke the Write contract: returned n=7 for 3 records", "c!destination broke", "d!destination broke"}},
		{"n negative with a retryable error", func(int, []opencdc.Record) (int, error) { return -1, retryable("down") },
			[]string{"a!destination broke the Write contract: returned n=-1 for 4 records, expected 0 <= n <= 4 (Write error: down)", "b!", "c!", "d!"}},
		{"a panic blames no record", func(call int, r []opencdc.Record) (int, error) {
			if call == 1 {
				return 1, fault("b is bad")
			}
			panic("boom")
		}, []string{"a", `b!record at position "b": b is bad`, "c!connector panicked in Write: boom", "d!connector panicked in Write: boom"}},
		{"an empty error text", func(call int, r []opencdc.Record) (int, error) {
			if call == 1 {
				return 1, faultErr{emptyError{}}
			}
			return 1, emptyError{}
		}, []string{"a", `b!record at position "b": destination returned an error with an empty message (plugin.faultErr)`, "c", `d!record at position "d": destination returned an error with an empty message (plugin.emptyError)`}},
		// A connector's error that already names its record (the Postgres
		// destination's do) is not prefixed again: the nack lands in the
		// record's dead-letter queue entry.
		{"a fault that names its record says so once", func(call int, r []opencdc.Record) (int, error) {
			if call == 1 {
				return 1, fault(`record at position "b": b is bad`)
			}
			return len(r), nil
		}, []string{"a", `b!record at position "b": b is bad`, "c", "d"}},
		{"an unmarked error that names its record says so once", func(int, []opencdc.Record) (int, error) {
			return 1, errors.New(`record at position "b": b failed`)
		}, []string{"a", `b!record at position "b": b failed`, `c!not attempted: the record at position "b" failed: b failed`, `d!not attempted: the record at position "b" failed: b failed`}},
		{"every record written with a retryable error", func(_ int, r []opencdc.Record) (int, error) { return len(r), retryable("late") },
			[]string{"a", "b", "c", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var acks []string
			call := 0
			err := outcomes{
				write:    func(_ context.Context, r []opencdc.Record) (int, error) { call++; return tt.write(call, r) },
				classify: testClassify,
				log:      discard,
				send: func(a []pconnector.DestinationRunResponseAck) error {
					acks = append(acks, ackTexts(pconnector.DestinationRunResponse{Acks: a})...)
					return nil
				},
			}.writeAll(t.Context(), records("a", "b", "c", "d"))
			is.NoErr(err)
			is.Equal(len(acks), len(tt.acks))
			for i, want := range tt.acks {
				if !strings.HasPrefix(acks[i], want) {
					t.Errorf("ack %d: %q, want %q...", i, acks[i], want)
				}
			}
		})
	}
}

func TestRetryBackoff(t *testing.T) {
	// Waits double from Delay up to MaxDelay, each drawn from the upper
	// half of its range; the acks of what was written go out before a wait.
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		s := &scripted{start: time.Now(), script: map[string]string{"b": "retry4"}}
		var sentAt []time.Duration
		o := outcomes{write: s.write, classify: testClassify, log: discard, retry: Retry{Attempts: 4, Delay: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond},
			send: func(a []pconnector.DestinationRunResponseAck) error {
				sentAt = append(sentAt, time.Since(s.start))
				return nil
			}}
		is.NoErr(o.writeAll(t.Context(), records("a", "b", "c")))
		is.Equal(len(s.calls), 5)
		bounds := []struct{ lo, hi time.Duration }{{50, 100}, {100, 200}, {150, 300}, {150, 300}}
		var prev time.Duration
		for i, call := range s.calls[1:] {
			at, err := time.ParseDuration(call[strings.Index(call, "@")+1:])
			is.NoErr(err)
			wait := at - prev
			prev = at
			lo, hi := bounds[i].lo*time.Millisecond, bounds[i].hi*time.Millisecond
			if wait < lo || wait > hi {
				t.Errorf("wait %d: %v, want between %v and %v (calls %v)", i+1, wait, lo, hi, s.calls)
			}
		}
		is.Equal(sentAt[0], time.Duration(0)) // "a" acked before the first wait
		is.Equal(len(sentAt), 2)
	})
}

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

func TestRetryEndsPromptly(t *testing.T) {
	hour := Retry{Attempts: 5, Delay: time.Hour, MaxDelay: time.Hour}
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
				s := &scripted{start: time.Now(), script: map[string]string{"b": "retry"}}
				done := make(chan []string)
				go func() {
					acks, _ := writeAllTexts(ctx, outcomes{retry: hour, halt: halt}, s, records("a", "b", "c"))
					done <- acks
				}()
				synctest.Wait() // waiting an hour before the first retry
				tt.end(halt, cancel)
				acks := <-done
				is.Equal(acks, []string{"a", "b!" + tt.nack, "c!" + tt.nack})
				is.Equal(len(s.calls), tt.calls)
				for _, c := range s.calls {
					is.True(strings.HasSuffix(c, "@0s")) // no wait ran its course
				}
			})
		})
	}
}

func TestRetryAfterStopRetriesOnceWithoutWaiting(t *testing.T) {
	// Stopped before the failure: one immediate retry, which here succeeds.
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		halt := newRetryHalt()
		halt.Stop()
		s := &scripted{start: time.Now(), script: map[string]string{"b": "retry1"}}
		acks, _ := writeAllTexts(t.Context(), outcomes{retry: Retry{Attempts: 5, Delay: time.Hour, MaxDelay: time.Hour}, halt: halt}, s, records("a", "b", "c"))
		is.Equal(acks, []string{"a", "b", "c"})
		is.Equal(s.calls, []string{"[a b c]@0s", "[b c]@0s"})
	})
}

func TestRecordFaultAfterTeardownLeavesTheRest(t *testing.T) {
	is := is.New(t)
	halt := newRetryHalt()
	s := &scripted{script: map[string]string{"a": "fault"}, before: func(int) { halt.Abort() }}
	acks, _ := writeAllTexts(t.Context(), outcomes{halt: halt}, s, records("a", "b"))
	is.Equal(acks, []string{`a!record at position "a": record a is bad`, "b!not attempted: the destination is tearing down"})
	is.Equal(len(s.calls), 1)
}

// newRetryingDestinationServer returns a server configured with dst and
// the batching and retry policies, opened.
func newRetryingDestinationServer(t *testing.T, dst testDestination, batch batcher.Policy, retry Retry) *destinationServer {
	t.Helper()
	d := testDestinationServer(func(map[string]string) (Destination, error) { return destinationOf(dst, batch, retry), nil })
	if _, err := d.Configure(t.Context(), pconnector.DestinationConfigureRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Open(t.Context(), pconnector.DestinationOpenRequest{}); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDestinationBatchWithFaultyRecordsNacksOnlyThem(t *testing.T) {
	// The case measured before per-record outcomes: batches of 10, a few bad
	// records, a dead-letter queue. Only the bad records may be nacked,
	// each with its own error.
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		bad := map[string]string{"3": "fault", "10": "fault", "11": "fault", "24": "fault"}
		s := &scripted{start: time.Now(), script: bad}
		d := newRetryingDestinationServer(t, &fakeDestination{write: func(r []opencdc.Record) (int, error) { return s.write(t.Context(), r) }},
			batcher.Policy{Count: 10}, Retry{Attempts: 8, Delay: 100 * time.Millisecond, MaxDelay: 10 * time.Second})
		ctx, cancel := context.WithCancel(t.Context())
		st, runDone := runDestination(ctx, d)
		for i := 1; i <= 30; i++ {
			st.in <- pconnector.DestinationRunRequest{Records: numbered(i, i)}
		}
		synctest.Wait()
		acks := finish(t, d, st, cancel, runDone, "30")
		is.Equal(len(acks), 30)
		for i, a := range acks {
			pos, nack, _ := strings.Cut(a, "!")
			is.Equal(pos, strconv.Itoa(i+1))
			if bad[pos] != "" {
				is.Equal(nack, fmt.Sprintf("record at position %q: record %s is bad", pos, pos))
			} else {
				is.Equal(nack, "")
			}
		}
	})
}

func TestDestinationStopEndsRetries(t *testing.T) {
	// A system failure during the last batch: Stop does not wait out the
	// backoff; the records are retried once at once and nacked.
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		s := &scripted{start: time.Now(), script: map[string]string{"2": "retry"}}
		d := newRetryingDestinationServer(t, &fakeDestination{write: func(r []opencdc.Record) (int, error) { return s.write(t.Context(), r) }},
			batcher.Policy{Count: 3}, Retry{Attempts: 5, Delay: time.Hour, MaxDelay: time.Hour})
		ctx, cancel := context.WithCancel(t.Context())
		st, runDone := runDestination(ctx, d)
		st.in <- pconnector.DestinationRunRequest{Records: numbered(1, 3)}
		synctest.Wait()
		is.Equal(drain(st), []string{"1"}) // acked before the wait
		start := time.Now()
		_, err := d.Stop(t.Context(), pconnector.DestinationStopRequest{LastPosition: opencdc.Position("3")})
		is.NoErr(err)
		is.Equal(time.Since(start), time.Duration(0))
		nack := "not written: retrying ended after 1 retries as the destination was stopped: connection lost at 2"
		is.Equal(drain(st), []string{"2!" + nack, "3!" + nack})
		cancel()
		is.NoErr(<-runDone)
		_, err = d.Teardown(t.Context(), pconnector.DestinationTeardownRequest{})
		is.NoErr(err)
	})
}

func TestDestinationTeardownEndsRetriesUnbatched(t *testing.T) {
	// Without batching, writes run on the stream's context; Teardown must
	// still end a backoff at once.
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		s := &scripted{start: time.Now(), script: map[string]string{"1": "retry"}}
		d := newRetryingDestinationServer(t, &fakeDestination{write: func(r []opencdc.Record) (int, error) { return s.write(t.Context(), r) }},
			batcher.Policy{}, Retry{Attempts: 5, Delay: time.Hour, MaxDelay: time.Hour})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		st, runDone := runDestination(ctx, d)
		st.in <- pconnector.DestinationRunRequest{Records: numbered(1, 1)}
		synctest.Wait()
		torndown := make(chan error)
		go func() {
			_, err := d.Teardown(t.Context(), pconnector.DestinationTeardownRequest{})
			torndown <- err
		}()
		synctest.Wait()
		is.Equal(drain(st), []string{"1!not written: retrying ended after 0 retries as the destination is torn down: connection lost at 1"})
		cancel() // Conduit ends the stream
		is.NoErr(<-runDone)
		is.NoErr(<-torndown)
		is.Equal(s.calls, []string{"[1]@0s"})
	})
}
