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
// Conduit acks nothing meanwhile: acks pace nothing.
func TestSourceBatchesWhileConduitWorks(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
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
			leakcheck.Check(t)
			synctest.Test(t, func(t *testing.T) {
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
	mu    sync.Mutex
	held  [][]string
	quit  chan struct{}
	done  chan struct{}
}

func newStoringAcker(r *sourceRun, store time.Duration) *storingAcker {
	a := &storingAcker{r: r, store: store, quit: make(chan struct{}), done: make(chan struct{})}
	go a.run()
	return a
}

func (a *storingAcker) ack(m []string) {
	if a.store == 0 {
		a.r.ack(m...)
		return
	}
	a.mu.Lock()
	a.held = append(a.held, m)
	a.mu.Unlock()
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
		a.mu.Lock()
		stored := a.held
		a.held = nil
		a.mu.Unlock()
		for _, m := range stored {
			a.r.ack(m...)
		}
	}
}

func (a *storingAcker) close() {
	close(a.quit)
	<-a.done
}
