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
)

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

func checkOutcomes(t *testing.T, kinds, batches []byte, retry Retry, endAt int, endHow byte) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	halt := newRetryHalt()
	ended := false // Stop, Teardown or the context's end happened
	var (
		calls   int
		written = map[string]bool{}
		failed  = map[string]int{}
	)
	kindOf := func(pos string) (kind byte, lasts int) {
		i, _ := strconv.Atoi(pos)
		b := kinds[i-1]
		return b % 6, int(b / 6 % 5)
	}
	outcome := func(records []opencdc.Record) (int, error) {
		for i, r := range records {
			pos := string(r.Position)
			switch kind, lasts := kindOf(pos); kind {
			case kindFault:
				return i, fault("record " + pos + " is bad")
			case kindRetry:
				if lasts == 0 || failed[pos] < lasts {
					failed[pos]++
					return i, retryable("system down at " + pos)
				}
			case kindUnknown:
				return i, errors.New("record " + pos + " failed")
			case kindShort:
				return i, nil
			case kindPanic:
				panic("boom at " + pos) // nothing is confirmed written
			}
		}
		return len(records), nil
	}
	write := func(_ context.Context, records []opencdc.Record) (int, error) {
		calls++
		if calls == endAt {
			ended = true
			switch endHow {
			case 0:
				halt.Stop()
			case 1:
				halt.Abort()
			default:
				cancel()
			}
		}
		n, err := outcome(records)
		for _, r := range records[:n] {
			written[string(r.Position)] = true
		}
		return n, err
	}

	var acks []pconnector.DestinationRunResponseAck
	o := outcomes{write: write, retry: retry, classify: testClassify, halt: halt, log: discard, send: func(a []pconnector.DestinationRunResponseAck) error {
		if len(a) == 0 {
			t.Fatal("an empty ack message")
		}
		acks = append(acks, a...)
		return nil
	}}
	all := make([]opencdc.Record, len(kinds))
	for i := range all {
		all[i].Position = opencdc.Position(strconv.Itoa(i + 1))
	}
	batchOf := map[string]int{} // position → index of its batch's first record
	for i, next := 0, 0; next < len(all); i++ {
		size := 1 + int(batches[i%len(batches)]%16)
		batch := all[next:min(len(all), next+size)]
		for _, r := range batch {
			batchOf[string(r.Position)] = next
		}
		if err := o.writeAll(ctx, batch); err != nil {
			t.Fatal(err)
		}
		next += len(batch)
	}

	if len(acks) != len(all) {
		t.Fatalf("%d acks for %d records", len(acks), len(all))
	}
	for i, a := range acks {
		pos := string(a.Position)
		if pos != strconv.Itoa(i+1) {
			t.Fatalf("ack %d is for position %s: out of order or twice", i+1, pos)
		}
		if (a.Error == "") != written[pos] {
			t.Fatalf("position %s: nack %q, but written=%v", pos, a.Error, written[pos])
		}
		if a.Error == "" {
			continue
		}
		kind, lasts := kindOf(pos)
		blame := fmt.Sprintf("record at position %q: ", pos)
		switch msg := a.Error; {
		case strings.HasPrefix(msg, "record at position"):
			want := map[byte]string{kindFault: "record " + pos + " is bad", kindUnknown: "record " + pos + " failed"}[kind]
			if want == "" || msg != blame+want {
				t.Fatalf("position %s (kind %d): nack %q blames a record, want %q", pos, kind, msg, blame+want)
			}
		case strings.HasPrefix(msg, "not attempted: the record at position"):
			var other string
			if _, err := fmt.Sscanf(msg, "not attempted: the record at position %q failed:", &other); err != nil {
				t.Fatalf("position %s: nack %q: %v", pos, msg, err)
			}
			o, _ := strconv.Atoi(other)
			if k, _ := kindOf(other); k != kindUnknown || o >= i+1 || batchOf[other] != batchOf[pos] || !strings.HasSuffix(msg, "failed: record "+other+" failed") {
				t.Fatalf("position %s: nack %q names a record that did not fail before it in its batch", pos, msg)
			}
		case msg == "not attempted: the destination is tearing down":
			if !ended || endHow == 0 {
				t.Fatalf("position %s: %q, but the destination was not torn down", pos, msg)
			}
		case strings.HasPrefix(msg, "not written: "):
			switch {
			case strings.Contains(msg, "still failed after"):
				if !strings.Contains(msg, fmt.Sprintf("after %d retries", retry.Attempts)) {
					t.Fatalf("position %s: %q, but the budget is %d retries", pos, msg, retry.Attempts)
				}
			case strings.Contains(msg, "retries are off"):
				if retry.Attempts != 0 {
					t.Fatalf("position %s: %q, but the budget is %d retries", pos, msg, retry.Attempts)
				}
			case strings.Contains(msg, "retrying ended"):
				if !ended {
					t.Fatalf("position %s: %q, but nothing ended the retries", pos, msg)
				}
			default:
				t.Fatalf("position %s: %q does not say why", pos, msg)
			}
			if !strings.Contains(msg, ": system down at ") {
				t.Fatalf("position %s: %q does not carry the system's error", pos, msg)
			}
		case strings.HasPrefix(msg, "destination broke the Write contract"), strings.HasPrefix(msg, "connector panicked in Write"):
		default:
			t.Fatalf("position %s: nack %q", pos, msg)
		}
		// A record that would be written, with retries enough and nothing
		// ended, is only nacked after an unmarked error, a broken contract
		// or a system failure that outlasted the retries at a record before
		// it in its batch.
		recovers := kind == kindOK || kind == kindRetry && lasts > 0 && lasts <= retry.Attempts
		if !recovers || ended {
			continue
		}
		switch msg := a.Error; {
		case strings.HasPrefix(msg, "not attempted: the record at position"),
			strings.HasPrefix(msg, "destination broke"), strings.HasPrefix(msg, "connector panicked"):
		case strings.HasPrefix(msg, "not written: "):
			other := msg[strings.LastIndex(msg, "system down at ")+len("system down at "):]
			o, _ := strconv.Atoi(other)
			if o >= i+1 || batchOf[other] != batchOf[pos] {
				t.Fatalf("position %s (kind %d, fails %d times, %d retries): nacked with %q", pos, kind, lasts, retry.Attempts, msg)
			}
		default:
			t.Fatalf("position %s (kind %d, fails %d times, %d retries): nacked with %q", pos, kind, lasts, retry.Attempts, msg)
		}
	}
}
