package plugin

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
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
	failB := func(err error) func([]opencdc.Record) (int, error) {
		failed := false
		return func(r []opencdc.Record) (int, error) {
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
				w := &writeLog{t: t, start: time.Now(), outcome: failB(tt.err)}
				o := outcomes{write: w.Write, retry: Retry{Attempts: 1, Delay: time.Second, MaxDelay: time.Second}, classify: tt.classify}
				is.Equal(writeAllTexts(t, t.Context(), o, records("a", "b", "c")), tt.acks)
				is.Equal(len(w.got()), tt.calls)
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

// scripted returns a writeLog whose records fail as script says, by
// position: "fault" and "unknown" fail every time, "retry" fails
// retryably, "retryN" the first N times; others are written.
func scripted(t *testing.T, script map[string]string) *writeLog {
	failed := map[string]int{} // retryable failures so far
	return &writeLog{t: t, start: time.Now(), outcome: func(records []opencdc.Record) (int, error) {
		for i, r := range records {
			pos := string(r.Position)
			switch what := script[pos]; {
			case what == "fault":
				return i, fault("record " + pos + " is bad")
			case what == "unknown":
				return i, errors.New("record " + pos + " failed")
			case what == "retry":
				return i, retryable("connection lost at " + pos)
			case strings.HasPrefix(what, "retry"):
				times, _ := strconv.Atoi(strings.TrimPrefix(what, "retry"))
				if failed[pos] < times {
					failed[pos]++
					return i, retryable("connection lost at " + pos)
				}
			}
		}
		return len(records), nil
	}}
}

// writeAllTexts runs o.writeAll over records and returns the acks it
// settles, before each retry's wait and at the end, as ackTexts renders
// them.
func writeAllTexts(t *testing.T, ctx context.Context, o outcomes, records []opencdc.Record) []string {
	var acks []string
	if o.log == nil {
		o.log = discard
	}
	o.pushedBack = func(a []ack) {
		acks = append(acks, ackTexts(pconnector.DestinationRunResponse{Acks: a})...)
	}
	last := o.writeAll(ctx, records) // before acks is read: pushedBack appends to it
	return append(acks, ackTexts(pconnector.DestinationRunResponse{Acks: last})...)
}

// TestWriteOutcomes: a record fault nacks its record alone, an unmarked
// error the rest, a retryable error is retried until the retries run out,
// and progress starts the count afresh.
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
				w := scripted(t, tt.script)
				o := outcomes{write: w.Write, retry: tt.retry, classify: testClassify}
				is.Equal(writeAllTexts(t, t.Context(), o, records("a", "b", "c", "d")), tt.acks)
				is.Equal(len(w.got()), tt.calls)
			})
		})
	}
}

// TestWriteOutcomesContract: what settle checks still holds, also on a
// Write after a record fault, and an error's text is never empty nor says
// its record twice.
func TestWriteOutcomesContract(t *testing.T) {
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
			call := 0
			o := outcomes{write: func(_ context.Context, r []opencdc.Record) (int, error) { call++; return tt.write(call, r) }, classify: testClassify}
			checkAckPrefixes(t, writeAllTexts(t, t.Context(), o, records("a", "b", "c", "d")), tt.acks)
		})
	}
}

// checkAckPrefixes checks that there are as many acks as wants, and that
// each ack, as ackTexts renders it, starts with its want.
func checkAckPrefixes(t *testing.T, acks, wants []string) {
	t.Helper()
	if len(acks) != len(wants) {
		t.Fatalf("%d acks %q, want %d", len(acks), acks, len(wants))
	}
	for i, want := range wants {
		if !strings.HasPrefix(acks[i], want) {
			t.Errorf("ack %d: %q, want %q...", i, acks[i], want)
		}
	}
}

// TestRecordFaultAfterTeardownLeavesTheRest: after a record fault, the
// records after it are not attempted once the destination is torn down.
func TestRecordFaultAfterTeardownLeavesTheRest(t *testing.T) {
	is := is.New(t)
	halt := newShutdown()
	w := scripted(t, map[string]string{"a": "fault"})
	fail := w.outcome
	w.outcome = func(r []opencdc.Record) (int, error) { halt.Abort(); return fail(r) } // torn down during the Write
	acks := writeAllTexts(t, t.Context(), outcomes{write: w.Write, classify: testClassify, shutdown: halt}, records("a", "b"))
	is.Equal(acks, []string{`a!record at position "a": record a is bad`, "b!not attempted: the destination is tearing down"})
	is.Equal(len(w.got()), 1)
}

// TestDestinationBatchWithFaultyRecordsNacksOnlyThem: the case measured
// before per-record outcomes: batches of 10, a few bad records, a
// dead-letter queue. Only the bad records may be nacked, each with its own
// error.
func TestDestinationBatchWithFaultyRecordsNacksOnlyThem(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		bad := map[string]string{"3": "fault", "10": "fault", "11": "fault", "24": "fault"}
		w := scripted(t, bad)
		r := newDestinationRun(t, openDestination(t, w, batcher.Policy{Count: 10}, Retry{Attempts: 8, Delay: 100 * time.Millisecond, MaxDelay: 10 * time.Second})).run()
		r.sendEach(1, 30)
		synctest.Wait()
		for i, nack := range nacksInOrder(t, r.finish("30"), 30) {
			if pos := strconv.Itoa(i + 1); bad[pos] != "" {
				is.Equal(nack, fmt.Sprintf("record at position %q: record %s is bad", pos, pos))
			} else {
				is.Equal(nack, "")
			}
		}
	})
}

// FuzzWriteOutcomes writes records with random outcomes (written, a record
// fault, a system failure that lasts some attempts, an unmarked error, a
// short write without an error, a panic), split into batches of random
// sizes, under a random retry policy, with Stop, Teardown or the end of the
// context at a random Write, and checks what Conduit would see:
//
//   - every record is acked or nacked exactly once, in order;
//   - a record is acked if and only if it was written;
//   - a nack that blames a record names the record nacked, with that
//     record's own error;
//   - any other nack says why the record was not written: another record
//     failed with an unmarked error ("not attempted", naming it), retries
//     ran out or were ended (and then they did run out, or were ended), or
//     the connector broke its contract;
//   - without Stop, Teardown or the end of the context, a record that
//     recovers within the retry budget is written unless an unmarked error,
//     a broken contract or a failure that outlasted the retries came
//     before it in its batch.
func FuzzWriteOutcomes(f *testing.F) {
	f.Add([]byte{0, 6, 0, 2, 0}, []byte{3}, uint8(2), uint8(0), uint8(0))
	f.Add([]byte{0, 1, 0, 3, 0, 1}, []byte{10}, uint8(0), uint8(0), uint8(0))
	f.Add([]byte{8, 14, 1, 20, 0}, []byte{2, 1}, uint8(3), uint8(2), uint8(1))
	f.Add([]byte{2, 2, 2, 0, 4, 5}, []byte{4}, uint8(1), uint8(1), uint8(2))
	f.Add([]byte{20, 0, 0}, []byte{1}, uint8(4), uint8(3), uint8(3))
	f.Fuzz(func(t *testing.T, kinds, batches []byte, attempts, endAt, endHow uint8) {
		if len(kinds) == 0 || len(batches) == 0 {
			return
		}
		kinds = kinds[:min(len(kinds), 64)]
		retry := Retry{Attempts: int(attempts % 5), Delay: 10 * time.Millisecond, MaxDelay: 40 * time.Millisecond}
		synctest.Test(t, func(t *testing.T) {
			checkOutcomes(t, kinds, batches, retry, int(endAt%16), endHow%3)
		})
	})
}

// A record's outcome, from a fuzz byte: kind is b%6, and a system failure
// lasts b/6%5 attempts (0: it fails every time).
const (
	kindOK = iota
	kindFault
	kindRetry
	kindUnknown
	kindShort
	kindPanic
)

// How a fuzzed run is ended at its endAt-th Write, from a fuzz byte
// (endHow).
const (
	endByStop     = iota // Stop
	endByTeardown        // Teardown
	endByContext         // the end of the Writes' context
)

// checkOutcomes writes records numbered from 1, one per kind, in batches
// whose sizes batches gives, with retry, to a fuzzDestination that ends
// the run at its endAt-th Write as endHow says; then it checks the acks
// as FuzzWriteOutcomes says (outcomeCheck).
func checkOutcomes(t *testing.T, kinds, batches []byte, retry Retry, endAt int, endHow byte) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	d := &fuzzDestination{kinds: kinds, endAt: endAt, endHow: endHow, halt: newShutdown(), cancel: cancel,
		written: map[string]bool{}, failed: map[string]int{}}
	o := outcomes{write: d.Write, retry: retry, classify: testClassify, shutdown: d.halt, log: discard}
	acks, batchOf := writeInBatches(ctx, o, len(kinds), batches)
	outcomeCheck{dst: d, retry: retry, batchOf: batchOf}.check(t, acks)
}

// fuzzDestination is FuzzWriteOutcomes's destination. Its records are
// numbered from 1, and kinds[i-1] says what its Writes do with record i;
// its endAt-th Write first ends the run as endHow says. It notes the
// records it wrote and whether the run was ended.
type fuzzDestination struct {
	kinds  []byte
	endAt  int
	endHow byte
	halt   *shutdown          // what Stop and Teardown go through
	cancel context.CancelFunc // ends the Writes' context

	calls   int
	ended   bool            // Stop, Teardown or the context's end happened
	written map[string]bool // positions written
	failed  map[string]int  // system failures so far, by position
}

// kindOf returns the kind of the record at pos and how many attempts a
// system failure of it lasts (0: every one).
func (d *fuzzDestination) kindOf(pos string) (kind byte, lasts int) {
	i, _ := strconv.Atoi(pos)
	b := d.kinds[i-1]
	return b % 6, int(b / 6 % 5)
}

// Write ends the run first if it is the endAt-th call, then writes records
// as their kinds say and notes the ones written.
func (d *fuzzDestination) Write(_ context.Context, records []opencdc.Record) (int, error) {
	d.calls++
	if d.calls == d.endAt {
		d.end()
	}
	n, err := d.outcome(records)
	for _, r := range records[:n] {
		d.written[string(r.Position)] = true
	}
	return n, err
}

// end ends the run as endHow says: Stop, Teardown or the end of the
// Writes' context.
func (d *fuzzDestination) end() {
	d.ended = true
	switch d.endHow {
	case endByStop:
		d.halt.Stop()
	case endByTeardown:
		d.halt.Abort()
	default: // endByContext
		d.cancel()
	}
}

// outcome writes records up to the first that fails this attempt as its
// kind says: a record fault, a system failure that has not yet lasted its
// attempts, an unmarked error, a short write without an error, or a panic
// (which confirms nothing written).
func (d *fuzzDestination) outcome(records []opencdc.Record) (int, error) {
	for i, r := range records {
		pos := string(r.Position)
		switch kind, lasts := d.kindOf(pos); kind {
		case kindFault:
			return i, fault("record " + pos + " is bad")
		case kindRetry:
			if lasts == 0 || d.failed[pos] < lasts {
				d.failed[pos]++
				return i, retryable("system down at " + pos)
			}
		case kindUnknown:
			return i, errors.New("record " + pos + " failed")
		case kindShort:
			return i, nil
		case kindPanic:
			panic("boom at " + pos)
		}
	}
	return len(records), nil
}

// writeInBatches writes n records, numbered from 1, with o, in batches of
// 1 to 16 records whose sizes batches gives in turn. It returns the acks o
// settles in the order it settles them (those it pushes back before a
// retry's wait included), and each position's batch: the index of the
// batch's first record.
func writeInBatches(ctx context.Context, o outcomes, n int, batches []byte) (acks []ack, batchOf map[string]int) {
	o.pushedBack = func(a []ack) { acks = append(acks, a...) }
	all := make([]opencdc.Record, n)
	for i := range all {
		all[i].Position = opencdc.Position(strconv.Itoa(i + 1))
	}
	batchOf = map[string]int{}
	for i, next := 0, 0; next < len(all); i++ {
		size := 1 + int(batches[i%len(batches)]%16)
		batch := all[next:min(len(all), next+size)]
		for _, r := range batch {
			batchOf[string(r.Position)] = next
		}
		settled := o.writeAll(ctx, batch) // before reading acks: pushedBack appends to them
		acks = append(acks, settled...)
		next += len(batch)
	}
	return acks, batchOf
}

// outcomeCheck checks the acks of one checkOutcomes run against what its
// destination did, its retry policy and its batches.
type outcomeCheck struct {
	dst     *fuzzDestination
	retry   Retry
	batchOf map[string]int // position → index of its batch's first record
}

// check checks that every record has one ack, in order; that a record is
// acked if and only if it was written; and that each nack says why in a
// way that fits the run (checkNack), and would not keep a record from
// being written without cause (checkRecoverable).
func (c outcomeCheck) check(t *testing.T, acks []ack) {
	if len(acks) != len(c.dst.kinds) {
		t.Fatalf("%d acks for %d records", len(acks), len(c.dst.kinds))
	}
	for i, a := range acks {
		pos := string(a.Position)
		if pos != strconv.Itoa(i+1) {
			t.Fatalf("ack %d is for position %s: out of order or twice", i+1, pos)
		}
		if (a.Error == "") != c.dst.written[pos] {
			t.Fatalf("position %s: nack %q, but written=%v", pos, a.Error, c.dst.written[pos])
		}
		if a.Error != "" {
			c.checkNack(t, pos, a.Error)
			c.checkRecoverable(t, pos, a.Error)
		}
	}
}

// checkNack checks that the nack of the record at pos is one of the nacks
// there are, and that what it says fits the run: a record it blames
// (checkBlame), another record that failed first (checkNotAttempted), a
// Teardown that did happen, a failure of the destination (checkNotWritten),
// or the connector breaking its contract.
func (c outcomeCheck) checkNack(t *testing.T, pos, msg string) {
	switch {
	case strings.HasPrefix(msg, "record at position"):
		c.checkBlame(t, pos, msg)
	case strings.HasPrefix(msg, "not attempted: the record at position"):
		c.checkNotAttempted(t, pos, msg)
	case msg == "not attempted: the destination is tearing down":
		if !c.dst.ended || c.dst.endHow == endByStop {
			t.Fatalf("position %s: %q, but the destination was not torn down", pos, msg)
		}
	case strings.HasPrefix(msg, "not written: "):
		c.checkNotWritten(t, pos, msg)
	case strings.HasPrefix(msg, "destination broke the Write contract"), strings.HasPrefix(msg, "connector panicked in Write"):
		// TestWriteOutcomesContract checks these texts.
	default:
		t.Fatalf("position %s: nack %q", pos, msg)
	}
}

// checkBlame checks a nack that blames its record: the record at pos is a
// record fault or an unmarked error, and the nack names it once, with
// its own error.
func (c outcomeCheck) checkBlame(t *testing.T, pos, msg string) {
	kind, _ := c.dst.kindOf(pos)
	blame := fmt.Sprintf("record at position %q: ", pos)
	want := map[byte]string{kindFault: "record " + pos + " is bad", kindUnknown: "record " + pos + " failed"}[kind]
	if want == "" || msg != blame+want {
		t.Fatalf("position %s (kind %d): nack %q blames a record, want %q", pos, kind, msg, blame+want)
	}
}

// checkNotAttempted checks a nack that says another record failed: that
// record failed with an unmarked error, before pos in its batch, and the
// nack ends with its error.
func (c outcomeCheck) checkNotAttempted(t *testing.T, pos, msg string) {
	var other string
	if _, err := fmt.Sscanf(msg, "not attempted: the record at position %q failed:", &other); err != nil {
		t.Fatalf("position %s: nack %q: %v", pos, msg, err)
	}
	if k, _ := c.dst.kindOf(other); k != kindUnknown || !c.earlierInBatch(other, pos) || !strings.HasSuffix(msg, "failed: record "+other+" failed") {
		t.Fatalf("position %s: nack %q names a record that did not fail before it in its batch", pos, msg)
	}
}

// checkNotWritten checks a nack that says the destination failed: it says
// why, and the reason fits the run (the retries ran out at the budget, the
// budget is 0, or something did end the run), and it carries the
// system's error.
func (c outcomeCheck) checkNotWritten(t *testing.T, pos, msg string) {
	switch {
	case strings.Contains(msg, "still failed after"):
		if !strings.Contains(msg, fmt.Sprintf("after %d retries", c.retry.Attempts)) {
			t.Fatalf("position %s: %q, but the budget is %d retries", pos, msg, c.retry.Attempts)
		}
	case strings.Contains(msg, "retries are off"):
		if c.retry.Attempts != 0 {
			t.Fatalf("position %s: %q, but the budget is %d retries", pos, msg, c.retry.Attempts)
		}
	case strings.Contains(msg, "retrying ended"):
		if !c.dst.ended {
			t.Fatalf("position %s: %q, but nothing ended the retries", pos, msg)
		}
	default:
		t.Fatalf("position %s: %q does not say why", pos, msg)
	}
	if !strings.Contains(msg, ": system down at ") {
		t.Fatalf("position %s: %q does not carry the system's error", pos, msg)
	}
}

// checkRecoverable checks the nack of a record that would be written (its
// Write succeeds, or its system failure lasts no more attempts than the
// retries allow) in a run nothing ended: only an unmarked error, a broken
// contract or a system failure that outlasted the retries, at a record
// before it in its batch, may have kept it from being written.
func (c outcomeCheck) checkRecoverable(t *testing.T, pos, msg string) {
	kind, lasts := c.dst.kindOf(pos)
	recovers := kind == kindOK || kind == kindRetry && lasts > 0 && lasts <= c.retry.Attempts
	if !recovers || c.dst.ended {
		return
	}
	switch {
	case strings.HasPrefix(msg, "not attempted: the record at position"),
		strings.HasPrefix(msg, "destination broke"), strings.HasPrefix(msg, "connector panicked"):
		return
	case strings.HasPrefix(msg, "not written: "):
		if other := msg[strings.LastIndex(msg, "system down at ")+len("system down at "):]; c.earlierInBatch(other, pos) {
			return
		}
	}
	t.Fatalf("position %s (kind %d, fails %d times, %d retries): nacked with %q", pos, kind, lasts, c.retry.Attempts, msg)
}

// earlierInBatch reports whether other is the position of a record before
// the one at pos in pos's batch.
func (c outcomeCheck) earlierInBatch(other, pos string) bool {
	batch, ok := c.batchOf[other]
	o, _ := strconv.Atoi(other)
	p, _ := strconv.Atoi(pos)
	return ok && o < p && batch == c.batchOf[pos]
}

type dbError struct{ msg string }

func (e *dbError) Error() string { return e.msg } // panics on a nil *dbError

// TestDestinationWriteOutcomes sends a message of three records, which
// Write writes alone, and a message of one, and checks the acks of each
// outcome of the first Write.
func TestDestinationWriteOutcomes(t *testing.T) {
	var typedNil *dbError
	tests := []struct {
		name  string
		write func([]opencdc.Record) (int, error)
		want  []string // acks of the message "a", "b", "c", then of the message "d"
	}{
		{"success", nil, []string{"a", "b", "c", "d"}},
		{"fails at index 1", func(r []opencdc.Record) (int, error) {
			if len(r) == 3 {
				return 1, errors.New("constraint violated")
			}
			return len(r), nil
		}, []string{"a", `b!record at position "b": constraint violated`, `c!not attempted: the record at position "b" failed: constraint violated`, "d"}},
		{"panics", func(r []opencdc.Record) (int, error) {
			if len(r) == 3 {
				panic("write exploded")
			}
			return len(r), nil
		}, []string{"a!connector panicked in Write: write exploded at outcome_test.go", "b!connector panicked in Write: write exploded at outcome_test.go", "c!connector panicked in Write: write exploded at outcome_test.go", "d"}},
		// A typed nil error whose Error method panics: the panic is the
		// Write's, and the plugin goes on.
		{"returns an error whose Error method panics", func(r []opencdc.Record) (int, error) {
			if len(r) == 3 {
				return 0, typedNil
			}
			return len(r), nil
		}, []string{
			"a!connector panicked in Write: runtime error: invalid memory address or nil pointer dereference at outcome_test.go",
			"b!connector panicked in Write: runtime error: invalid memory address or nil pointer dereference at outcome_test.go",
			"c!connector panicked in Write: runtime error: invalid memory address or nil pointer dereference at outcome_test.go",
			"d",
		}},
		// Write must not change its records; if it does, acks still name
		// the records Conduit sent.
		{"rewrites positions", func(r []opencdc.Record) (int, error) {
			for i := range r {
				r[i].Position = opencdc.Position("changed")
			}
			return len(r), nil
		}, []string{"a", "b", "c", "d"}},
		{"short write without error", func(r []opencdc.Record) (int, error) { return len(r) - 1, nil },
			[]string{"a", "b", "c!destination broke the Write contract: wrote 2 of 3 records but returned no error", "d!destination broke the Write contract: wrote 0 of 1 records but returned no error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T, is *is.I) {
				w := &writeLog{t: t, start: time.Now(), outcome: tt.write}
				r := newDestinationRun(t, openDestination(t, w, batcher.Policy{}, Retry{})).run()
				r.sendRecords(records("a", "b", "c")...)
				synctest.Wait() // written alone, before the next message comes
				r.sendRecords(records("d")...)
				is.Equal(panickedIn(ackTexts(<-r.st.out, <-r.st.out)), tt.want)
				is.Equal(w.got(), []string{"[a b c]@0s", "[d]@0s"})
				r.end()
			})
		})
	}
}

// connectorFrame is where a nack says a panic happened when its innermost
// frame is in this file: " at function (…/outcome_test.go:line)…".
var connectorFrame = regexp.MustCompile(` at \S+ \(\S*/outcome_test\.go:\d+\).*$`)

// panickedIn shortens the place named in each ack text to " at
// outcome_test.go" when the panic was in this file, so that tests can
// say that the nack names the connector's frame without its line.
func panickedIn(acks []string) []string {
	for i, a := range acks {
		acks[i] = connectorFrame.ReplaceAllString(a, " at outcome_test.go")
	}
	return acks
}

// Retries: the backoff policy, and what ends a retrying Write.

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
			pushedBack: func(a []ack) {
				if len(a) > 0 {
					sentAt = append(sentAt, time.Since(w.start))
				}
			}}
		is.Equal(len(o.writeAll(t.Context(), records("a", "b", "c"))), 2) // "b" and "c", at the end
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
		is.Equal(sentAt, []time.Duration{0}) // "a" acked before the first wait
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
		end   func(halt *shutdown, cancel context.CancelFunc)
		calls int    // Writes, all at 0s
		nack  string // what the unwritten records' nacks say
	}{
		{"Stop makes the last attempt at once", func(h *shutdown, _ context.CancelFunc) { h.Stop() }, 2,
			"not written: retrying ended after 1 retries as the destination was stopped: connection lost at b"},
		{"Teardown ends retries", func(h *shutdown, _ context.CancelFunc) { h.Abort() }, 1,
			"not written: retrying ended after 0 retries as the destination is torn down: connection lost at b"},
		{"the context ends retries", func(_ *shutdown, cancel context.CancelFunc) { cancel() }, 1,
			"not written: retrying ended after 0 retries (context canceled): connection lost at b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T, is *is.I) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				halt := newShutdown()
				w := scripted(t, map[string]string{"b": "retry"})
				done := make(chan []string)
				go func() {
					done <- writeAllTexts(t, ctx, outcomes{write: w.Write, classify: testClassify, retry: hourly, shutdown: halt}, records("a", "b", "c"))
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
		halt := newShutdown()
		halt.Stop()
		w := scripted(t, map[string]string{"b": "retry1"})
		acks := writeAllTexts(t, t.Context(), outcomes{write: w.Write, classify: testClassify, retry: hourly, shutdown: halt}, records("a", "b", "c"))
		is.Equal(acks, []string{"a", "b", "c"})
		is.Equal(w.got(), []string{"[a b c]@0s", "[b c]@0s"})
	})
}

// TestDestinationStopEndsRetries: a system failure during the last batch:
// Stop does not wait out the backoff; the records are retried once at
// once and nacked.
func TestDestinationStopEndsRetries(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
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
	inBubble(t, func(t *testing.T, is *is.I) {
		w := scripted(t, map[string]string{"1": "retry"})
		r := newDestinationRun(t, openDestination(t, w, batcher.Policy{}, hourly)).run()
		r.send(1, 1)
		synctest.Wait()
		torndown := background(r.teardown)
		synctest.Wait()
		is.Equal(r.acks(), []string{"1!not written: retrying ended after 0 retries as the destination is torn down: connection lost at 1"})
		r.cancel() // Conduit ends the stream
		is.NoErr(r.wait())
		is.NoErr(<-torndown)
		is.Equal(w.got(), []string{"[1]@0s"})
	})
}
