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
			leakcheck.Check(t)
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				r := newSourceRun(t, openSource(t, tt.src, batcher.Policy{})).run()
				for _, a := range tt.acks {
					synctest.Wait()
					r.ack(a)
				}
				err := r.wait()
				is.True(err != nil)
				is.True(strings.Contains(err.Error(), tt.want))
				r.cancel()
				_, err = r.s.Teardown(t.Context(), pconnector.SourceTeardownRequest{})
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

// runPaced runs a pacedSource of n records, without batch settings.
func runPaced(t *testing.T, n int) *sourceRun {
	return newSourceRun(t, openSource(t, pacedSource{&fakeSource{limit: n}}, batcher.Policy{})).run()
}

// sentLate returns the number of the paced source's record at pos, and how
// long after it was read it is sent now, for a run that began at start.
func sentLate(start time.Time, pos string) (n int, late time.Duration) {
	n, _ = strconv.Atoi(pos)
	return n, time.Since(start) - time.Duration(n)*time.Millisecond
}

// TestSourceBatchesWhileConduitWorks plays Conduit's v2 engine, which
// takes a message only once it has acked the last, taking 5 ms per
// message, against a source reading a record every millisecond and no
// batch settings: the records read while Conduit works on a message
// travel together in the next, not each in a message of its own waiting
// in the stream.
func TestSourceBatchesWhileConduitWorks(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		r := runPaced(t, 200)
		messages := 0
		r.receive(200, func(m []string) {
			messages++
			time.Sleep(5 * time.Millisecond)
			r.ack(m...)
		})
		// About 5 records a message once the first is acked.
		if messages > 200/3 {
			t.Errorf("200 records came in %d messages, expected at most %d", messages, 200/3)
		}
		r.end()
	})
}

// TestSourceHoldsBackBriefly plays a host that acks the first message
// late and then no more until it has every record: records wait for its
// acks at most maxHoldBack, never for records to come.
func TestSourceHoldsBackBriefly(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		r := runPaced(t, 100)
		acked := false
		r.receive(100, func(m []string) {
			for _, p := range m {
				if n, late := sentLate(r.start, p); late > maxHoldBack {
					t.Errorf("record %d sent %v after it was read, expected at most %v", n, late, maxHoldBack)
				}
			}
			if !acked { // the first message, late
				acked = true
				go func() {
					time.Sleep(50 * time.Millisecond) // a round trip longer than maxHoldBack
					r.ack(m[0])
				}()
			}
		})
		r.end()
	})
}

// TestSourceFlowsWhileAcksAreStored plays Conduit v0.19's v2 engine,
// which takes every message at once and acks what it took only once it
// has stored the positions, once a second, in one request: records go as
// they are read, none waiting for acks that come that late. (In v0.14's
// v2 engine, acks that come 5 ms after each message hold each batch about
// that long: TestSourceBatchesWhileConduitWorks.)
func TestSourceFlowsWhileAcksAreStored(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		const n = 3000
		r := runPaced(t, n)
		var (
			mu      sync.Mutex
			pending []string // taken, not yet acked
		)
		storeDone := make(chan struct{})
		stopStore := make(chan struct{})
		go func() {
			defer close(storeDone)
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-tick.C:
				case <-stopStore:
					return
				}
				mu.Lock()
				stored := pending
				pending = nil
				mu.Unlock()
				if len(stored) > 0 {
					r.ack(stored...)
				}
			}
		}()
		var late time.Duration
		r.receive(n, func(m []string) {
			for _, p := range m {
				_, l := sentLate(r.start, p)
				late += max(0, l)
			}
			mu.Lock()
			pending = append(pending, m...)
			mu.Unlock()
		})
		close(stopStore)
		<-storeDone
		// Acks hold back at most the batch after each store, by at most
		// maxHoldBack: three of them in 3,000 records.
		if mean := late / n; mean > 3*maxHoldBack/n {
			t.Errorf("records were sent %v after they were read on average, expected at most %v", mean, 3*maxHoldBack/n)
		}
		r.end()
	})
}

// TestSourceRecordByRecordAcksHoldNothing plays Conduit's default engine,
// which takes every message at once and acks record by record, 5 ms after
// it took them: once it has acked a message of several records so,
// records go as they are read, none waiting for acks.
func TestSourceRecordByRecordAcksHoldNothing(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		r := runPaced(t, 100)
		type due struct {
			at        time.Time
			positions []string
		}
		toAck := make(chan due, 100)
		ackerDone := make(chan struct{})
		go func() {
			defer close(ackerDone)
			for d := range toAck {
				time.Sleep(time.Until(d.at))
				for _, p := range d.positions {
					r.ack(p)
				}
			}
		}()
		r.receive(100, func(m []string) {
			for _, p := range m {
				if n, late := sentLate(r.start, p); n > 20 && late > 0 {
					t.Errorf("record %d sent %v after it was read, expected at once", n, late)
				}
			}
			toAck <- due{time.Now().Add(5 * time.Millisecond), m}
		})
		close(toAck)
		<-ackerDone
		r.end()
	})
}

// TestConduitAcksTellsHowMessagesAreAcked: a message of several records
// acked in one request means Conduit acks messages whole; one acked over
// several requests means it acks record by record; a message of one record
// tells neither.
func TestConduitAcksTellsHowMessagesAreAcked(t *testing.T) {
	tests := []struct {
		name     string
		sent     []int // message sizes
		requests []int // records per ack request
		want     bool
		unacked  int // messages not wholly acked after the requests
	}{
		{"nothing acked yet", []int{3}, nil, true, 1},
		{"whole", []int{3}, []int{3}, true, 0},
		{"record by record", []int{3}, []int{1, 1, 1}, false, 0},
		{"split in two", []int{3}, []int{2, 1}, false, 0},
		{"half acked", []int{3}, []int{2}, true, 1},
		{"one record tells nothing", []int{3, 1}, []int{1, 1, 1, 1}, false, 0},
		{"whole again after record by record", []int{2, 2}, []int{1, 1, 2}, true, 0},
		{"record by record after whole", []int{2, 2}, []int{2, 1, 1}, false, 0},
		{"several messages in one request", []int{2, 2, 1}, []int{5}, false, 0},
		{"one message a request again", []int{2, 2, 2}, []int{4, 2}, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newConduitAcks()
			for _, n := range tt.sent {
				a.sent(n, time.Now())
			}
			for _, n := range tt.requests {
				a.acked(n)
			}
			unacked, byMessage, _ := a.state()
			if byMessage != tt.want {
				t.Errorf("byMessage = %v, want %v", byMessage, tt.want)
			}
			if unacked != tt.unacked {
				t.Errorf("%d messages not wholly acked, want %d", unacked, tt.unacked)
			}
		})
	}
}
