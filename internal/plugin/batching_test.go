package plugin

import (
	"context"
	"errors"
	"fmt"
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

// writeLog records the batches a destination was asked to write and when,
// and fails the test if Write is ever called concurrently.
type writeLog struct {
	t       *testing.T
	start   time.Time
	outcome func(batch []opencdc.Record) (int, error) // nil: all written
	delay   time.Duration                             // each Write takes this long

	mu      sync.Mutex
	active  int
	batches []string
}

func (w *writeLog) write(records []opencdc.Record) (int, error) {
	w.mu.Lock()
	w.active++
	if w.active > 1 {
		w.t.Error("Write called concurrently with itself")
	}
	w.batches = append(w.batches, fmt.Sprintf("%s@%v", positionList(records), time.Since(w.start)))
	w.mu.Unlock()
	if w.delay > 0 {
		time.Sleep(w.delay)
	}
	defer func() {
		w.mu.Lock()
		w.active--
		w.mu.Unlock()
	}()
	if w.outcome != nil {
		return w.outcome(records)
	}
	return len(records), nil
}

func (w *writeLog) got() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.batches...)
}

func positionList(records []opencdc.Record) string {
	p := make([]string, len(records))
	for i, r := range records {
		p[i] = string(r.Position)
	}
	return "[" + strings.Join(p, " ") + "]"
}

func numbered(from, to int) []opencdc.Record {
	var out []opencdc.Record
	for i := from; i <= to; i++ {
		out = append(out, opencdc.Record{Position: opencdc.Position(strconv.Itoa(i)), Payload: opencdc.Change{After: opencdc.RawData("0123456789")}})
	}
	return out
}

// batchedServer returns a destination server whose destination batches
// under p and writes through w.
func batchedServer(t *testing.T, p batcher.Policy, w *writeLog) *destinationServer {
	t.Helper()
	return newBatchedDestinationServer(t, &fakeDestination{write: w.write}, p)
}

// drain returns the acks sent so far, as ackTexts renders them.
func drain(st destinationStream) []string {
	var resps []pconnector.DestinationRunResponse
	for {
		select {
		case r := <-st.out:
			resps = append(resps, r)
		default:
			return ackTexts(resps...)
		}
	}
}

// finish stops at last, closes the stream, tears down, and returns the acks
// sent after the ones already drained.
func finish(t *testing.T, d *destinationServer, st destinationStream, cancel context.CancelFunc, runDone <-chan error, last string) []string {
	t.Helper()
	if _, err := d.Stop(t.Context(), pconnector.DestinationStopRequest{LastPosition: opencdc.Position(last)}); err != nil {
		t.Fatal(err)
	}
	acks := drain(st)
	cancel()
	if err := <-runDone; err != nil {
		t.Fatal(err)
	}
	if _, err := d.Teardown(t.Context(), pconnector.DestinationTeardownRequest{}); err != nil {
		t.Fatal(err)
	}
	return acks
}

// TestDestinationBatching sends records one per message, as Conduit's
// default engine does, and checks which batches are written when: whenever
// the writer is free it writes everything received so far, up to the
// limits (group commit), and only a delay makes an incomplete batch wait.
func TestDestinationBatching(t *testing.T) {
	tests := []struct {
		name   string
		policy batcher.Policy
		write  time.Duration // how long each Write takes
		sends  []any         // a number n sends record n; a duration waits
		want   []string      // batches written before Stop
		stop   []string      // batches Stop writes
	}{{
		name:  "an idle destination writes a lone record at once",
		sends: []any{1, 2 * time.Second, 2},
		want:  []string{"[1]@0s", "[2]@2s"},
	}, {
		name:  "a busy destination coalesces what arrived during the write",
		write: time.Second,
		sends: []any{1, 2, 3, 4, 2 * time.Second, 5},
		want:  []string{"[1]@0s", "[2 3 4]@1s", "[5]@2s"},
	}, {
		name:   "size only: a partial batch is written when the writer is free",
		policy: batcher.Policy{Count: 3},
		write:  time.Second,
		sends:  []any{1, 2, 3, 4, 5, time.Hour},
		want:   []string{"[1]@0s", "[2 3 4]@1s", "[5]@2s"},
	}, {
		name:   "delay only waits for the oldest record's delay",
		policy: batcher.Policy{Delay: time.Second},
		sends:  []any{1, 2, 500 * time.Millisecond, 3, time.Second, 4},
		want:   []string{"[1 2 3]@1s"},
		stop:   []string{"[4]@1.5s"},
	}, {
		name:   "bytes only",
		policy: batcher.Policy{Bytes: 25}, // records are 11 or 12 bytes here
		write:  time.Second,
		sends:  []any{1, 2, 3, 4, 5, 3 * time.Second},
		want:   []string{"[1]@0s", "[2 3]@1s", "[4 5]@2s"},
	}, {
		name:   "size and delay: a complete batch does not wait",
		policy: batcher.Policy{Count: 2, Delay: time.Second},
		sends:  []any{1, 2, 3, 2 * time.Second, 4},
		want:   []string{"[1 2]@0s", "[3]@1s"},
		stop:   []string{"[4]@2s"},
	}, {
		name:   "all three",
		policy: batcher.Policy{Count: 3, Bytes: 1000, Delay: time.Second},
		sends:  []any{1, 2, 3, 4, 2 * time.Second, 5},
		want:   []string{"[1 2 3]@0s", "[4]@1s"},
		stop:   []string{"[5]@2s"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakcheck.Check(t)
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				w := &writeLog{t: t, start: time.Now(), delay: tt.write}
				d := batchedServer(t, tt.policy, w)
				ctx, cancel := context.WithCancel(t.Context())
				st, runDone := runDestination(ctx, d)
				last := 0
				for _, s := range tt.sends {
					switch s := s.(type) {
					case int:
						st.in <- pconnector.DestinationRunRequest{Records: numbered(s, s)}
						last = s
					case time.Duration:
						time.Sleep(s)
					}
					synctest.Wait()
				}
				is.Equal(w.got(), tt.want)
				acked := drain(st)
				acked = append(acked, finish(t, d, st, cancel, runDone, strconv.Itoa(last))...)
				is.Equal(w.got(), append(tt.want, tt.stop...))
				var want []string
				for i := 1; i <= last; i++ {
					want = append(want, strconv.Itoa(i))
				}
				is.Equal(acked, want) // every record acked once, in order
			})
		})
	}
}

// TestStopNeverWaitsOnAPartialBatch: Stop writes what is held at once,
// whatever the size and delay.
func TestStopNeverWaitsOnAPartialBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		w := &writeLog{t: t, start: time.Now()}
		d := batchedServer(t, batcher.Policy{Count: 100, Delay: time.Hour}, w)
		ctx, cancel := context.WithCancel(t.Context())
		st, runDone := runDestination(ctx, d)
		st.in <- pconnector.DestinationRunRequest{Records: numbered(1, 3)}
		synctest.Wait()
		is.Equal(len(w.got()), 0) // waiting for the delay
		start := time.Now()
		acks := finish(t, d, st, cancel, runDone, "3")
		is.Equal(time.Since(start), time.Duration(0)) // at once
		is.Equal(acks, []string{"1", "2", "3"})
	})
}

// TestTeardownNeverWaitsOnAPartialBatch: Conduit closes the stream and
// tears down (as the v2 engine does, without Stop) while a batch waits to
// fill: Run and Teardown return at once, and what was never acked is not
// written, since Conduit delivers it again.
func TestTeardownNeverWaitsOnAPartialBatch(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		w := &writeLog{t: t, start: time.Now()}
		d := batchedServer(t, batcher.Policy{Count: 100, Delay: time.Hour}, w)
		ctx, cancel := context.WithCancel(t.Context())
		_, runDone := runDestination(ctx, d)
		start := time.Now()
		cancel()
		is.NoErr(<-runDone)
		_, err := d.Teardown(t.Context(), pconnector.DestinationTeardownRequest{})
		is.NoErr(err)
		is.Equal(time.Since(start), time.Duration(0))
	})
}

// TestEndOfStreamWritesWhatIsHeld: when Conduit closes its side of the
// stream, what was received is written and acked at once, not after the
// delay.
func TestEndOfStreamWritesWhatIsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		w := &writeLog{t: t, start: time.Now()}
		d := batchedServer(t, batcher.Policy{Count: 100, Delay: time.Hour}, w)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		st, runDone := runDestination(ctx, d)
		st.in <- pconnector.DestinationRunRequest{Records: numbered(1, 3)}
		close(st.in)
		is.NoErr(<-runDone)
		is.Equal(w.got(), []string{"[1 2 3]@0s"})
		is.Equal(drain(st), []string{"1", "2", "3"})
	})
}

// TestStopAfterSizeTriggeredFlush is a regression test for the incumbent's
// destination, whose Stop waits a minute when the last batch was flushed by
// its size.
func TestStopAfterSizeTriggeredFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		w := &writeLog{t: t, start: time.Now()}
		d := batchedServer(t, batcher.Policy{Count: 2, Delay: time.Minute}, w)
		ctx, cancel := context.WithCancel(t.Context())
		st, runDone := runDestination(ctx, d)
		st.in <- pconnector.DestinationRunRequest{Records: numbered(1, 1)}
		st.in <- pconnector.DestinationRunRequest{Records: numbered(2, 2)}
		synctest.Wait()
		start := time.Now()
		acks := finish(t, d, st, cancel, runDone, "2")
		is.Equal(time.Since(start), time.Duration(0)) // at once
		is.Equal(acks, []string{"1", "2"})
		is.Equal(w.got(), []string{"[1 2]@0s"})
	})
}

// TestStopFlushesARecordStillInTransit covers Stop arriving before the last
// record has been received from the stream.
func TestStopFlushesARecordStillInTransit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		w := &writeLog{t: t, start: time.Now()}
		d := batchedServer(t, batcher.Policy{Count: 100}, w)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		st, runDone := runDestination(ctx, d)
		synctest.Wait() // Run is receiving
		stopped := make(chan error, 1)
		go func() {
			_, err := d.Stop(t.Context(), pconnector.DestinationStopRequest{LastPosition: opencdc.Position("1")})
			stopped <- err
		}()
		synctest.Wait()
		is.Equal(len(stopped), 0)
		st.in <- pconnector.DestinationRunRequest{Records: numbered(1, 1)}
		is.NoErr(<-stopped)
		is.Equal(drain(st), []string{"1"})
		cancel()
		is.NoErr(<-runDone)
		_, err := d.Teardown(t.Context(), pconnector.DestinationTeardownRequest{})
		is.NoErr(err)
	})
}

// TestBatchFailures injects a failure at every index of a batch, and the
// Write contract violations, and checks that every record is acked or
// nacked exactly once, in order, and that later batches are still written.
func TestBatchFailures(t *testing.T) {
	type outcome func([]opencdc.Record) (int, error)
	failFirstBatch := func(o outcome) outcome {
		return func(r []opencdc.Record) (int, error) {
			if string(r[0].Position) == "1" {
				return o(r)
			}
			return len(r), nil
		}
	}
	tests := []struct {
		name    string
		outcome outcome
		acked   int    // records of the first batch acked
		nack    string // what the nacks say
	}{
		{"panic", func([]opencdc.Record) (int, error) { panic("boom") }, 0, "connector panicked in Write: boom"},
		{"n too large", func(r []opencdc.Record) (int, error) { return len(r) + 1, nil }, 0, "returned n=5 for 4 records"},
		{"n negative", func(r []opencdc.Record) (int, error) { return -1, nil }, 0, "returned n=-1 for 4 records"},
		{"short write without error", func(r []opencdc.Record) (int, error) { return 2, nil }, 2, "wrote 2 of 4 records but returned no error"},
	}
	for k := range 4 {
		tests = append(tests, struct {
			name    string
			outcome outcome
			acked   int
			nack    string
		}{fmt.Sprintf("fails at index %d", k), func([]opencdc.Record) (int, error) { return k, errors.New("disk full") }, k, "disk full"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakcheck.Check(t)
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				w := &writeLog{t: t, start: time.Now(), outcome: failFirstBatch(tt.outcome)}
				d := batchedServer(t, batcher.Policy{Count: 4}, w)
				ctx, cancel := context.WithCancel(t.Context())
				st, runDone := runDestination(ctx, d)
				st.in <- pconnector.DestinationRunRequest{Records: numbered(1, 8)}
				synctest.Wait()
				acks := finish(t, d, st, cancel, runDone, "8")
				is.Equal(len(acks), 8)
				for i, a := range acks {
					pos, nack, _ := strings.Cut(a, "!")
					is.Equal(pos, strconv.Itoa(i+1)) // in order, each once
					switch {
					case i < tt.acked || i >= 4:
						is.Equal(nack, "")
					default:
						is.True(strings.Contains(nack, tt.nack))
					}
				}
				is.Equal(w.got(), []string{"[1 2 3 4]@0s", "[5 6 7 8]@0s"})
			})
		})
	}
}

// TestSlowWritesKeepCollecting checks that the next batch is collected while
// one is written, and that Write never runs concurrently with itself.
func TestSlowWritesKeepCollecting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		w := &writeLog{t: t, start: time.Now(), delay: time.Second}
		d := batchedServer(t, batcher.Policy{Count: 2}, w)
		ctx, cancel := context.WithCancel(t.Context())
		st, runDone := runDestination(ctx, d)
		st.in <- pconnector.DestinationRunRequest{Records: numbered(1, 1)}
		synctest.Wait() // [1] is being written: the writer was free
		for i := 2; i <= 6; i++ {
			st.in <- pconnector.DestinationRunRequest{Records: numbered(i, i)}
		}
		time.Sleep(3 * time.Second)
		acks := finish(t, d, st, cancel, runDone, "6")
		is.Equal(acks, []string{"1", "2", "3", "4", "5", "6"})
		is.Equal(w.got(), []string{"[1]@0s", "[2 3]@1s", "[4 5]@2s", "[6]@3s"})
	})
}

// TestHoldBoundStopsReceiving checks that while the hold bound is reached,
// the server stops receiving once its inbox is full, so that flow control
// pushes back on Conduit: it receives the bound and one full inbox at
// least, since the reader receives until the inbox is full, and two at
// most, since the owner takes a whole inbox whenever the bound has room.
// Finished writes make room again, and every record is written once, in
// order.
func TestHoldBoundStopsReceiving(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		const n = 3 * inboxCount
		w := &writeLog{t: t, start: time.Now(), delay: time.Second}
		p := batcher.Policy{Count: 2}
		d := batchedServer(t, p, w)
		ctx, cancel := context.WithCancel(t.Context())
		st, runDone := runDestination(ctx, d)
		st.in <- pconnector.DestinationRunRequest{Records: numbered(1, 1)}
		synctest.Wait() // [1] is being written
		sent := make(chan struct{}, n)
		go func() {
			for i := 2; i <= n; i++ {
				st.in <- pconnector.DestinationRunRequest{Records: numbered(i, i)}
				sent <- struct{}{}
			}
		}()
		synctest.Wait()
		received := 1 + len(sent)
		bound := holdFor(p).Count
		if received < bound+inboxCount || received > bound-1+2*inboxCount {
			t.Fatalf("%d records received while the writer is busy, want %d to %d", received, bound+inboxCount, bound-1+2*inboxCount)
		}
		time.Sleep(n / 2 * time.Second) // the writes of n records, 2 a second
		acks := finish(t, d, st, cancel, runDone, strconv.Itoa(n))
		is.Equal(len(acks), n)
		var want []string
		for i := 1; i <= n; i++ {
			want = append(want, strconv.Itoa(i))
		}
		is.Equal(acks, want)
		is.Equal(len(w.got()), n/2+1) // [1], then pairs, then the last alone
	})
}

// TestStopWhileAWriteIsInFlight checks that Stop returns only once the
// batch being written is acked.
func TestStopWhileAWriteIsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		w := &writeLog{t: t, start: time.Now(), delay: time.Minute}
		d := batchedServer(t, batcher.Policy{Count: 3}, w)
		ctx, cancel := context.WithCancel(t.Context())
		st, runDone := runDestination(ctx, d)
		st.in <- pconnector.DestinationRunRequest{Records: numbered(1, 3)}
		synctest.Wait()
		start := time.Now()
		acks := finish(t, d, st, cancel, runDone, "3")
		is.Equal(time.Since(start), time.Minute)
		is.Equal(acks, []string{"1", "2", "3"})
	})
}

// TestStreamClosedMidBatch closes the stream while a batch is being written
// and another is collected: Run and Teardown return, no record is written
// twice, and once acks cannot be sent nothing more is written (those records
// were never acked, so Conduit delivers them again).
func TestStreamClosedMidBatch(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		w := &writeLog{t: t, start: time.Now(), delay: time.Second}
		d := batchedServer(t, batcher.Policy{Count: 2}, w)
		ctx, cancel := context.WithCancel(t.Context())
		st, runDone := runDestination(ctx, d)
		st.in <- pconnector.DestinationRunRequest{Records: numbered(1, 2)}
		st.in <- pconnector.DestinationRunRequest{Records: numbered(3, 3)}
		synctest.Wait()
		cancel() // Conduit goes away mid-write
		is.NoErr(<-runDone)
		_, err := d.Teardown(t.Context(), pconnector.DestinationTeardownRequest{})
		is.NoErr(err)
		is.Equal(w.got(), []string{"[1 2]@0s"})
		is.Equal(len(drain(st)), 0)
	})
}

// TestMessagesLargerThanABatch covers the v2 engine, whose messages carry a
// source's whole batch: a message is split into batches of the policy's size.
func TestMessagesLargerThanABatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		w := &writeLog{t: t, start: time.Now()}
		d := batchedServer(t, batcher.Policy{Count: 4}, w)
		ctx, cancel := context.WithCancel(t.Context())
		st, runDone := runDestination(ctx, d)
		st.in <- pconnector.DestinationRunRequest{Records: numbered(1, 10)}
		synctest.Wait()
		acks := finish(t, d, st, cancel, runDone, "10")
		is.Equal(len(acks), 10)
		is.Equal(w.got(), []string{"[1 2 3 4]@0s", "[5 6 7 8]@0s", "[9 10]@0s"})
	})
}

// FuzzDestinationAcks drives random message sizes, batching policies and
// Write outcomes through the server's batching and outcomes, and checks
// the ack invariants: one ack per record, in order, and a positive ack for
// exactly the records Write reported as written.
func FuzzDestinationAcks(f *testing.F) {
	f.Add(uint8(3), uint8(0), uint8(0), []byte{1, 1, 1, 5, 2}, []byte{0, 1, 2, 3})
	f.Add(uint8(0), uint8(30), uint8(2), []byte{4, 0, 1}, []byte{7, 0})
	f.Add(uint8(0), uint8(0), uint8(0), []byte{2, 2}, []byte{5})
	f.Fuzz(func(t *testing.T, count, bytes, delay uint8, messages, outcomes []byte) {
		synctest.Test(t, func(t *testing.T) {
			policy := batcher.Policy{Count: int(count % 6), Bytes: int(bytes % 64), Delay: time.Duration(delay%4) * time.Millisecond}
			durable := map[string]bool{}
			calls := 0
			w := &writeLog{t: t, start: time.Now(), outcome: func(r []opencdc.Record) (int, error) {
				var o byte
				if len(outcomes) > 0 {
					o = outcomes[calls%len(outcomes)]
				}
				calls++
				if o&0x80 != 0 {
					time.Sleep(time.Millisecond) // a slow write: records pile up and coalesce
				}
				n, err := len(r), error(nil)
				switch o % 6 {
				case 1:
					n, err = int(o/6)%(len(r)+1), errors.New("failed")
				case 2:
					panic("write panicked")
				case 3:
					n = len(r) + 1 // out of range
				case 4:
					n = int(o/6) % (len(r) + 1) // maybe a short write without an error
				}
				if n >= 0 && n <= len(r) {
					for _, rec := range r[:n] {
						durable[string(rec.Position)] = true
					}
				}
				return n, err
			}}
			d := batchedServer(t, policy, w)
			ctx, cancel := context.WithCancel(t.Context())
			st, runDone := runDestination(ctx, d)
			total := 0
			if len(messages) > 100 {
				messages = messages[:100] // the in-memory stream buffers 1000 ack messages
			}
			for _, m := range messages {
				size := int(m % 8)
				if size == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				st.in <- pconnector.DestinationRunRequest{Records: numbered(total+1, total+size)}
				total += size
				if m&0x80 == 0 {
					synctest.Wait() // else the next message comes while this one is handled
				}
			}
			if total == 0 {
				cancel()
				<-runDone
				return
			}
			acks := finish(t, d, st, cancel, runDone, strconv.Itoa(total))
			if len(acks) != total {
				t.Fatalf("%d acks for %d records", len(acks), total)
			}
			for i, a := range acks {
				pos, nack, _ := strings.Cut(a, "!")
				if pos != strconv.Itoa(i+1) {
					t.Fatalf("ack %d is for position %s", i+1, pos)
				}
				if (nack == "") != durable[pos] {
					t.Fatalf("position %s: nack %q, but written=%v", pos, nack, durable[pos])
				}
			}
		})
	})
}
