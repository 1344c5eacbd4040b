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
	"github.com/connkit/connkit/batcher"
	"github.com/matryer/is"
)

// The owner loop of both roles under each batching policy, against
// the real servers over the in-memory stream, in virtual time.

// batchCase is a destination under a batching policy, whose Writes each
// take write, fed records as sends says: a number n sends record n in a
// message of its own, as Conduit's default engine does; a pair
// [2]int{from, to} sends those records in one message, as the v2 engine
// does; a duration waits that long. The server settles after each step.
type batchCase struct {
	name   string
	policy batcher.Policy
	write  time.Duration // how long each Write takes
	sends  []any
	want   []string      // batches written before Stop
	stop   []string      // batches Stop writes
	took   time.Duration // how long Stop at the last record sent, and the run's end, take
}

// run plays c, stops at the last record sent, and checks which batches
// were written when, that every record is acked once, in order, and how
// long Stop took. Its writeLog fails the test if Write ever runs
// concurrently with itself.
func (c batchCase) run(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		r := loggedDestination(t, c.policy, &writeLog{delay: c.write}).run()
		last := 0
		for _, s := range c.sends {
			switch s := s.(type) {
			case int:
				r.send(s, s)
				last = s
			case [2]int:
				r.send(s[0], s[1])
				last = s[1]
			case time.Duration:
				time.Sleep(s)
			default:
				t.Fatalf("cannot send %v (%T)", s, s)
			}
			synctest.Wait()
		}
		is.Equal(r.log.got(), c.want)
		acked := r.acks()
		start := time.Now()
		acked = append(acked, r.finish(strconv.Itoa(last))...)
		is.Equal(time.Since(start), c.took)
		is.Equal(r.log.got(), append(c.want, c.stop...))
		is.Equal(acked, upTo(last)) // every record acked once, in order
	})
}

// TestDestinationBatching checks which batches a destination writes when:
// whenever the writer is free it writes everything received so far, up to
// the limits (group commit), and only a delay makes an incomplete batch
// wait.
func TestDestinationBatching(t *testing.T) {
	tests := []batchCase{{
		name:  "an idle destination writes a lone record at once",
		sends: []any{1, 2 * time.Second, 2},
		want:  []string{"[1]@0s", "[2]@2s"},
	}, {
		name:  "a busy destination coalesces what arrived during the write",
		write: time.Second,
		sends: []any{1, 2, 3, 4, 2 * time.Second, 5},
		want:  []string{"[1]@0s", "[2 3 4]@1s", "[5]@2s"},
		took:  time.Second, // [5] is being written
	}, {
		name:   "size only: a partial batch is written when the writer is free",
		policy: batcher.Policy{Count: 3},
		write:  time.Second,
		sends:  []any{1, 2, 3, 4, 5, time.Hour},
		want:   []string{"[1]@0s", "[2 3 4]@1s", "[5]@2s"},
	}, {
		name:   "size only: the next batch is collected while one is written",
		policy: batcher.Policy{Count: 2},
		write:  time.Second,
		sends:  []any{1, 2, 3, 4, 5, 6, 3 * time.Second},
		want:   []string{"[1]@0s", "[2 3]@1s", "[4 5]@2s", "[6]@3s"},
		took:   time.Second, // [6] is being written
	}, {
		name:   "size only: a message larger than a batch is split into batches",
		policy: batcher.Policy{Count: 4},
		sends:  []any{[2]int{1, 10}},
		want:   []string{"[1 2 3 4]@0s", "[5 6 7 8]@0s", "[9 10]@0s"},
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
		t.Run(tt.name, tt.run)
	}
}

// TestSourceBatching reads a source under each policy. Sending takes no
// time here, so the sender is free whenever a record is read: without a
// delay, every record read goes out at once, alone or with the others read
// meanwhile, never waiting for a batch to fill; with a delay, a batch waits
// for it.
func TestSourceBatching(t *testing.T) {
	tests := []struct {
		name    string
		policy  batcher.Policy
		limit   int        // records the source has
		wantRun [][]string // messages sent before Stop; nil: any grouping within the limits
	}{
		{"size", batcher.Policy{Count: 2}, 5, nil},
		{"delay sends a partial batch while Read waits", batcher.Policy{Count: 10, Delay: time.Second}, 3, [][]string{{"1", "2", "3"}}},
		{"bytes", batcher.Policy{Bytes: 2}, 4, nil}, // positions are the bytes here
		{"none", batcher.Policy{}, 4, nil},
	}
	for _, tt := range tests {
		for _, batchRead := range []bool{false, true} {
			name := tt.name
			if batchRead {
				name += " with ReadBatch"
			}
			t.Run(name, func(t *testing.T) {
				inBubble(t, func(t *testing.T, is *is.I) {
					fake := &fakeSource{limit: tt.limit}
					var src testSource = fake
					bs := &batchSource{fakeSource: fake}
					if batchRead {
						src = bs
					}
					r := newSourceRun(t, openSource(t, src, tt.policy)).run()
					time.Sleep(2 * time.Second)
					synctest.Wait()
					sent := r.sent()
					if tt.wantRun != nil {
						is.Equal(sent, tt.wantRun)
					}
					is.Equal(withinLimits(is, sent, tt.policy), upTo(tt.limit)) // everything read is sent, in order, before Stop
					last, err := r.stop()
					is.NoErr(err)
					is.Equal(len(r.sent()), 0)
					is.Equal(last, strconv.Itoa(tt.limit))
					r.end()
					if batchRead {
						is.True(len(bs.asked) > 0)
						if tt.policy.Count > 0 {
							is.Equal(bs.asked[0], tt.policy.Count) // asks for a batch's worth
						}
					}
				})
			})
		}
	}
}

// withinLimits checks that each message of sent holds a record or more,
// within p's limits (a record is a byte here), and returns their records.
func withinLimits(is *is.I, sent [][]string, p batcher.Policy) []string {
	var all []string
	for _, m := range sent {
		is.True(len(m) > 0)
		is.True(p.Count == 0 || len(m) <= p.Count)
		is.True(p.Bytes == 0 || len(m) <= p.Bytes)
		all = append(all, m...)
	}
	return all
}

// heldWhileBusy returns how many records a server under p takes in while
// its first batch is with the worker (whose pace is not measured yet): the
// hold bound and one full inbox at least, since its reader fills the
// inbox, and two at most, since the owner takes a whole inbox whenever the
// bound has room.
func heldWhileBusy(p batcher.Policy) (least, most int) {
	bound, inbox := holdFor(p, 1).Count, max(1, aheadOf(p, 0))
	return bound + inbox, bound - 1 + 2*inbox
}

// TestHoldBoundStopsReceiving checks that while the hold bound is reached,
// the destination stops receiving once its inbox is full, so that flow
// control pushes back on Conduit (see heldWhileBusy). Finished writes make
// room again, and every record is written once, in order.
func TestHoldBoundStopsReceiving(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		const n = 3 * inboxCount
		p := batcher.Policy{Count: 2}
		r := loggedDestination(t, p, &writeLog{delay: time.Second}).run()
		r.send(1, 1)
		synctest.Wait() // [1] is being written
		sent := make(chan struct{}, n)
		go func() {
			for i := 2; i <= n; i++ {
				r.send(i, i)
				sent <- struct{}{}
			}
		}()
		synctest.Wait()
		least, most := heldWhileBusy(p)
		if received := 1 + len(sent); received < least || received > most {
			t.Fatalf("%d records received while the writer is busy, want %d to %d", received, least, most)
		}
		time.Sleep(n / 2 * time.Second) // the writes of n records, 2 a second
		is.Equal(r.finish(strconv.Itoa(n)), upTo(n))
		is.Equal(len(r.log.got()), n/2+1) // [1], then pairs, then the last alone
	})
}

// TestSlowWriterKeepsReaderClose: once the writer's pace is measured, a
// destination receives ahead of a slow writer what it writes in
// aheadTime, at least a batch (aheadOf), on top of the hold bound: records
// wait a few writes, not a full inbox of them.
func TestSlowWriterKeepsReaderClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		const n = 40
		p := batcher.Policy{Count: 1}
		r := loggedDestination(t, p, &writeLog{delay: 10 * time.Millisecond}).run()
		sent := make(chan struct{}, n)
		go func() {
			for i := 1; i <= n; i++ {
				r.send(i, i)
				sent <- struct{}{}
			}
		}()
		most := holdFor(p, 1).Count + aheadOf(p, 100) + 1 // the bound, the inbox and the message in the reader's hands
		for range n / 2 {
			time.Sleep(10 * time.Millisecond) // a write
			synctest.Wait()
			if lead := len(sent) - len(r.log.got()); lead > most {
				t.Fatalf("%d records received ahead of the writer, want at most %d", lead, most)
			}
		}
		is.Equal(r.finish(strconv.Itoa(n)), upTo(n))
	})
}

// TestSourceBoundStopsReading: while Conduit does not take messages, the
// source is read up to the hold bound and no further (see heldWhileBusy);
// once Conduit takes messages, reading goes on, never further ahead.
func TestSourceBoundStopsReading(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		const n = 3 * inboxCount
		fake := &fakeSource{limit: n}
		p := batcher.Policy{Count: 2}
		r := newSourceRun(t, openSource(t, fake, p))
		r.holding(0) // Send blocks until a message is taken
		r.run()
		synctest.Wait()
		least, most := heldWhileBusy(p)
		if read := fake.read(); read < least || read > most {
			t.Fatalf("%d records read while Conduit takes none, want %d to %d", read, least, most)
		}
		received := 0
		r.receive(n, func(m []string) {
			received += len(m)
			synctest.Wait()
			is.True(fake.read()-received <= most) // never further ahead
		})
		r.end()
	})
}

// TestEndOfStreamWritesWhatIsHeld: when Conduit closes its side of the
// stream, what was received is written and acked at once, not after the
// delay.
func TestEndOfStreamWritesWhatIsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		r := loggedDestination(t, batcher.Policy{Count: 100, Delay: time.Hour}, &writeLog{}).run()
		r.send(1, 3)
		close(r.st.in)
		is.NoErr(r.wait())
		is.Equal(r.log.got(), []string{"[1 2 3]@0s"})
		is.Equal(r.acks(), upTo(3))
		r.end()
	})
}

// TestStreamClosedMidBatch closes the stream while a batch is being written
// and another is collected: Run and Teardown return, no record is written
// twice, and once acks cannot be sent nothing more is written (those records
// were never acked, so Conduit delivers them again).
func TestStreamClosedMidBatch(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		r := loggedDestination(t, batcher.Policy{Count: 2}, &writeLog{delay: time.Second}).run()
		r.send(1, 2)
		r.send(3, 3)
		synctest.Wait()
		r.end() // Conduit goes away mid-write; no ack is sent
		is.Equal(r.log.got(), []string{"[1 2]@0s"})
	})
}

// TestBatchFailures injects a failure at every index of a batch, and the
// Write contract violations, and checks that every record is acked or
// nacked exactly once, in order, and that later batches are still written.
func TestBatchFailures(t *testing.T) {
	type failure struct {
		name    string
		outcome func([]opencdc.Record) (int, error) // the first batch's
		acked   int                                 // records of the first batch acked
		nack    string                              // what the nacks say
	}
	tests := []failure{
		{"panic", func([]opencdc.Record) (int, error) { panic("boom") }, 0, "connector panicked in Write: boom"},
		{"n too large", func(r []opencdc.Record) (int, error) { return len(r) + 1, nil }, 0, "returned n=5 for 4 records"},
		{"n negative", func(r []opencdc.Record) (int, error) { return -1, nil }, 0, "returned n=-1 for 4 records"},
		{"short write without error", func(r []opencdc.Record) (int, error) { return 2, nil }, 2, "wrote 2 of 4 records but returned no error"},
	}
	for k := range 4 {
		tests = append(tests, failure{fmt.Sprintf("fails at index %d", k), func([]opencdc.Record) (int, error) { return k, errors.New("disk full") }, k, "disk full"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T, is *is.I) {
				failFirstBatch := func(batch []opencdc.Record) (int, error) {
					if string(batch[0].Position) == "1" {
						return tt.outcome(batch)
					}
					return len(batch), nil
				}
				r := loggedDestination(t, batcher.Policy{Count: 4}, &writeLog{outcome: failFirstBatch}).run()
				r.send(1, 8)
				synctest.Wait()
				for i, nack := range nacksInOrder(t, r.finish("8"), 8) {
					switch {
					case i < tt.acked || i >= 4:
						is.Equal(nack, "")
					default:
						is.True(strings.Contains(nack, tt.nack))
					}
				}
				is.Equal(r.log.got(), []string{"[1 2 3 4]@0s", "[5 6 7 8]@0s"})
			})
		})
	}
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
			r := loggedDestination(t, policy, &writeLog{outcome: fuzzedWrites(outcomes, durable)}).run()
			total := sendFuzzedMessages(r, messages)
			if total == 0 {
				r.end()
				return
			}
			for i, nack := range nacksInOrder(t, r.finish(strconv.Itoa(total)), total) {
				if pos := strconv.Itoa(i + 1); (nack == "") != durable[pos] {
					t.Fatalf("position %s: nack %q, but written=%v", pos, nack, durable[pos])
				}
			}
		})
	})
}

// fuzzedWrites returns FuzzDestinationAcks's Write outcome, which plays
// script, a byte o per Write in turn (none: every Write writes all): by
// o%6, 1 writes o/6 records (modulo the batch's size + 1) and fails, 2
// panics, 3 returns an n out of range, 4 writes o/6 records (modulo the
// same) without an error, maybe a short write, and the others write all;
// with the high bit set the Write first takes a millisecond. It marks in
// durable the records a Write reports written, if its n is in range.
func fuzzedWrites(script []byte, durable map[string]bool) func(batch []opencdc.Record) (int, error) {
	calls := 0
	return func(batch []opencdc.Record) (int, error) {
		var o byte
		if len(script) > 0 {
			o = script[calls%len(script)]
		}
		calls++
		if o&0x80 != 0 {
			time.Sleep(time.Millisecond) // a slow write: records pile up and coalesce
		}
		n, err := len(batch), error(nil)
		switch o % 6 {
		case 1:
			n, err = int(o/6)%(len(batch)+1), errors.New("failed")
		case 2:
			panic("write panicked")
		case 3:
			n = len(batch) + 1 // out of range
		case 4:
			n = int(o/6) % (len(batch) + 1) // maybe a short write without an error
		}
		if n >= 0 && n <= len(batch) {
			for _, rec := range batch[:n] {
				durable[string(rec.Position)] = true
			}
		}
		return n, err
	}
}

// sendFuzzedMessages sends r up to 100 messages, one per byte m, of m%8
// records numbered on from 1 (0 records: a millisecond's pause instead);
// unless m's high bit is set, r handles each before the next comes. It
// returns how many records it sent.
func sendFuzzedMessages(r *destinationRun, messages []byte) (total int) {
	if len(messages) > 100 {
		messages = messages[:100] // the in-memory stream buffers 1000 ack messages
	}
	for _, m := range messages {
		size := int(m % 8)
		if size == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		r.send(total+1, total+size)
		total += size
		if m&0x80 == 0 {
			synctest.Wait() // else the next message comes while this one is handled
		}
	}
	return total
}

// ackMessages takes every ack message r has sent so far and returns how
// many there were and the positions they acked, in order.
func ackMessages(r *destinationRun) (messages int, positions []string) {
	for {
		select {
		case m := <-r.st.out:
			messages++
			for _, a := range m.Acks {
				positions = append(positions, string(a.Position))
			}
		default:
			return messages, positions
		}
	}
}

// TestAcksGoTogetherUnderLoad: at batch size 1, while each Write is short
// and records wait, or while each Send of acks takes ten times a Write, a
// destination sends the acks of several Writes in one message; each record
// is acked once, in order, and Stop returns once the last ack is sent.
func TestAcksGoTogetherUnderLoad(t *testing.T) {
	for _, sendDelay := range []time.Duration{0, time.Millisecond} {
		t.Run(fmt.Sprintf("Sends of %v", sendDelay), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				const n = 200
				r := loggedDestination(t, batcher.Policy{Count: 1}, &writeLog{delay: 100 * time.Microsecond})
				r.st.sendDelay = sendDelay
				r.run()
				go r.sendEach(1, n)
				time.Sleep(n*100*time.Microsecond + 10*time.Millisecond) // the Writes, and the last Sends
				synctest.Wait()
				messages, positions := ackMessages(r)
				is.Equal(positions, upTo(n))
				is.Equal(len(r.log.got()), n) // a Write per record
				if messages > n/5 {
					t.Errorf("%d records acked in %d messages, expected a message per 5 Writes or fewer (Writes of 0.1 ms, Sends of %v)", n, messages, sendDelay)
				}
				is.NoErr(r.stop(strconv.Itoa(n)))
				r.end()
			})
		})
	}
}

// TestAcksAloneWhenNothingWaits: a record that comes alone is acked at
// once, and so is each record behind Writes longer than half of ackLinger,
// even under load: acks wait for company only behind short Writes.
func TestAcksAloneWhenNothingWaits(t *testing.T) {
	for _, tt := range []struct {
		name  string
		delay time.Duration // each Write's
		load  bool          // the records come at once, not one by one
	}{
		{"idle", 100 * time.Microsecond, false},
		{"long writes under load", ackLinger, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				const n = 20
				r := loggedDestination(t, batcher.Policy{Count: 1}, &writeLog{delay: tt.delay}).run()
				if tt.load {
					go r.sendEach(1, n)
					time.Sleep(n * tt.delay) // the Writes
					synctest.Wait()
				} else {
					for i := 1; i <= n; i++ {
						r.send(i, i)
						time.Sleep(tt.delay)
						synctest.Wait()
						messages, positions := ackMessages(r)
						is.Equal(messages, 1) // acked as soon as written
						is.Equal(positions, []string{strconv.Itoa(i)})
					}
				}
				messages, positions := ackMessages(r)
				if tt.load {
					is.Equal(positions, upTo(n))
					is.Equal(messages, n) // a message per Write
				}
				is.NoErr(r.stop(strconv.Itoa(n)))
				r.end()
			})
		})
	}
}

// A source's runs: its failures, and how the owner hands a sender what
// was read, whatever Conduit does with its acks.

// TestSourceRunFailures: a Read that panics, a record without a position
// and acks that do not match what was sent end Run with an error that says
// so, and Teardown still works.
func TestSourceRunFailures(t *testing.T) {
	tests := []struct {
		name string
		src  *fakeSource
		acks []string
		want string
	}{
		{"Read panics", &fakeSource{limit: 3, readPanic: true}, nil, "connector panicked in Read: read exploded"},
		{"record without position", &fakeSource{limit: 3, badPos: true}, nil, "without a position"},
		{"ack out of order", &fakeSource{limit: 2}, []string{"2"}, `ack for position "2", expected "1"`},
		{"ack for nothing sent", &fakeSource{limit: 0}, []string{"9"}, `ack for position "9", expected ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T, is *is.I) {
				r := newSourceRun(t, openSource(t, tt.src, batcher.Policy{})).run()
				for _, a := range tt.acks {
					synctest.Wait()
					r.ack(a)
				}
				err := r.wait()
				is.True(err != nil)
				is.True(strings.Contains(err.Error(), tt.want))
				r.cancel()
				err = r.teardown()
				is.NoErr(err)
			})
		})
	}
}

// pacedSource is a fakeSource that reads a record every millisecond: record
// n is read n ms after Run starts.
type pacedSource struct{ *fakeSource }

func (s pacedSource) Read(ctx context.Context) (opencdc.Record, error) {
	select {
	case <-time.After(time.Millisecond):
	case <-ctx.Done():
		return opencdc.Record{}, ctx.Err()
	}
	return s.fakeSource.Read(ctx)
}

// runPacedBehind runs a pacedSource of n records, without batch settings,
// behind a transport that holds held messages Conduit has not taken.
func runPacedBehind(t *testing.T, n, held int) *sourceRun {
	return newSourceRun(t, openSource(t, pacedSource{&fakeSource{limit: n}}, batcher.Policy{})).holding(held).run()
}

// sentLate returns the number of the paced source's record at pos, and how
// long after it was read it is sent now, for a run that began at start.
func sentLate(start time.Time, pos string) (n int, late time.Duration) {
	n, _ = strconv.Atoi(pos)
	return n, time.Since(start) - time.Duration(n)*time.Millisecond
}

// TestSourceBatchesWhileConduitWorks plays Conduit's v2 engine, which
// takes a message only once it is done with the last, taking 5 ms per
// message, behind a transport that holds one message it has not taken,
// against a source reading a record every millisecond and no batch
// settings: the records read while Conduit works travel together in the
// next message, not each in a message of its own waiting in the stream.
// Conduit acks nothing meanwhile: no ack paces the source.
func TestSourceBatchesWhileConduitWorks(t *testing.T) {
	inBubble(t, func(t *testing.T, _ *is.I) {
		r := runPacedBehind(t, 200, 1)
		messages := 0
		r.receive(200, func([]string) {
			messages++
			time.Sleep(5 * time.Millisecond)
		})
		// About 5 records a message once the transport holds one.
		if messages > 200/3 {
			t.Errorf("200 records came in %d messages, expected at most %d", messages, 200/3)
		}
		r.end()
	})
}

// TestSourceWaitsForConduitThatAcksByMessage plays Conduit v0.14's v2
// engine with its acks: it takes a message, works 5 ms on it, acks it in
// a request of its own, and only then takes the next, behind a transport
// that holds one message. Once that is seen, a due message waits for the
// ack instead of for Conduit in the transport: the message Conduit takes
// carries what was read until it takes it, not what was read until the
// message before was taken, 5 ms earlier.
func TestSourceWaitsForConduitThatAcksByMessage(t *testing.T) {
	inBubble(t, func(t *testing.T, _ *is.I) {
		const n = 400
		r := runPacedBehind(t, n, 1)
		var stale []time.Duration // how long before Conduit took it each message's newest record was read
		r.receive(n, func(m []string) {
			_, late := sentLate(r.start, m[len(m)-1])
			stale = append(stale, late)
			time.Sleep(5 * time.Millisecond)
			r.ack(m...)
		})
		for i, late := range stale[len(stale)/2:] {
			if late > 2*time.Millisecond {
				t.Errorf("message %d of %d: its newest record was read %v before Conduit took it, expected at most 2ms", len(stale)/2+i+1, len(stale), late)
			}
		}
		r.end()
	})
}

// TestSourceSendsWhatConduitTakesAtOnce plays a Conduit that takes every
// message as it comes and acks at once, later (Conduit v0.19 stores the
// positions first, about once a second, and then sends one request per
// message, back to back) or not at all: however the acks come, every
// record is sent the moment it is read.
func TestSourceSendsWhatConduitTakesAtOnce(t *testing.T) {
	tests := []struct {
		name  string
		store time.Duration // how long acks wait for a store; 0: sent at once
		acks  bool
	}{
		{"acks at once", 0, true},
		{"acks stored every second", time.Second, true},
		{"no acks", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T, _ *is.I) {
				const n = 2500
				r := runPacedBehind(t, n, 1000)
				acker := newStoringAcker(r, tt.store)
				r.receive(n, func(m []string) {
					for _, p := range m {
						if rec, late := sentLate(r.start, p); late > 0 {
							t.Errorf("record %d sent %v after it was read, expected at once", rec, late)
						}
					}
					if tt.acks {
						acker.ack(m)
					}
				})
				acker.close()
				r.end()
			})
		})
	}
}

// storingAcker acks messages of a sourceRun as Conduit does: each message
// in a request of its own, at once or, with a store interval, held until
// the next store and then sent back to back.
type storingAcker struct {
	r     *sourceRun
	store time.Duration
	held  chan []string // messages waiting for the next store
	quit  chan struct{}
	done  chan struct{}
}

func newStoringAcker(r *sourceRun, store time.Duration) *storingAcker {
	a := &storingAcker{r: r, store: store, held: make(chan []string, 10000), quit: make(chan struct{}), done: make(chan struct{})}
	go a.run()
	return a
}

func (a *storingAcker) ack(m []string) {
	if a.store == 0 {
		a.r.ack(m...)
		return
	}
	a.held <- m
}

func (a *storingAcker) run() {
	defer close(a.done)
	if a.store == 0 {
		return
	}
	tick := time.NewTicker(a.store)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-a.quit:
			return
		}
		for stored := len(a.held); stored > 0; stored-- {
			a.r.ack(<-a.held...)
		}
	}
}

func (a *storingAcker) close() {
	close(a.quit)
	<-a.done
}
