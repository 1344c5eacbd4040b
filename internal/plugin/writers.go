package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/internal/metrics"
)

// writers is a destination's flow: it writes each batch the owner hands
// out and settles every record with one ack (see [outcomes]), as many
// Writes at once as the limiter allows, a record only once no Write in
// flight holds its key (with ByKey), and sends the acks to Conduit in
// record order, one Send at a time (see ledger).
type writers struct {
	ctx      context.Context
	outcomes outcomes
	sendAcks func([]ack) error
	metrics  *metrics.Set

	limit   *limiter
	ledger  ledger
	lanes   *lanes // nil: any record may go in any Write
	writes  map[uint64]*write
	allowed []lane // the lanes of the records the last room allowed; nil: none taken
	solo    int    // Writes in flight started alone, their records in no lane

	readySince time.Time     // when the oldest ack ready and not yet in a Send became ready
	lastTook   time.Duration // how long the last Write took
	retrying   int           // Writes in flight that met a retryable error

	work    *workers[writeJob]
	sends   chan []ack    // to the goroutine that sends acks
	sent    chan struct{} // closed once that goroutine has returned
	sendErr error         // a Send failed: no more go
	reports chan writeEvent
}

// write is a Write in flight.
type write struct {
	size       int
	began      time.Time
	lanes      []lane // its records' lanes, held; nil: it started alone
	complete   bool   // its batch reached a batching limit or the hold bound
	pushedBack bool   // it met a retryable error
}

// writeJob is a batch to write, the seq-th Write.
type writeJob struct {
	seq   uint64
	batch []opencdc.Record
}

// writeEvent is what a Write settled, or the end of a Send.
type writeEvent struct {
	seq        uint64
	acks       []ack
	ended      bool // the Write ended: acks are its last
	pushedBack bool // it met a retryable error, and waits to try again
	sent       bool // not a Write's: the Send in flight ended, with err
	err        error
}

func newWriters(ctx context.Context, o outcomes, c Concurrency, m *metrics.Set, sendAcks func([]ack) error) *writers {
	w := &writers{ctx: ctx, outcomes: o, sendAcks: sendAcks, metrics: m, limit: newLimiter(c), writes: map[uint64]*write{}}
	if c.ByKey && w.limit.max > 1 {
		w.lanes = &lanes{held: map[uint64]held{}}
	}
	// Every Write may report before it ends, a Send at once.
	w.reports = make(chan writeEvent, w.limit.max+1)
	w.sends, w.sent = make(chan []ack, 1), make(chan struct{})
	w.work = newWorkers(w.limit.max, w.do)
	go func() {
		defer close(w.sent)
		for acks := range w.sends {
			w.reports <- writeEvent{sent: true, err: w.sendAcks(acks)}
		}
	}()
	return w
}

// do writes job's batch, on a goroutine of the workers.
func (w *writers) do(job writeJob) {
	o := w.outcomes
	o.pushedBack = func(settled []ack) {
		w.reports <- writeEvent{seq: job.seq, acks: settled, pushedBack: true}
	}
	acks := o.writeAll(w.ctx, job.batch)
	w.reports <- writeEvent{seq: job.seq, acks: acks, ended: true}
}

// free reports whether another Write may start: the limit has room, and
// no Write that started alone (its records in no lane) is in flight.
func (w *writers) free(time.Time, bool) bool {
	return w.ledger.inFlight < w.limit.current() && w.solo == 0
}

// room returns how many records of next may go in a Write: with lanes,
// while more than one Write may be in flight, those before the first that
// must follow a record in flight (see lanes); otherwise all of them. A
// Write that may be the only one in flight goes alone, its records in no
// lane: none can be out of order behind it, and no Write starts beside
// it (see free).
func (w *writers) room(next []opencdc.Record) int {
	w.allowed = nil
	if w.lanes == nil || w.limit.current() == 1 {
		return len(next)
	}
	n, ls := w.lanes.free(next)
	w.allowed = ls
	return n
}

func (w *writers) slots() int { return w.limit.current() }

func (w *writers) start(batch []opencdc.Record, complete bool, now time.Time) {
	seq := w.ledger.open(len(batch))
	wr := &write{size: len(batch), began: now, complete: complete}
	switch {
	case w.allowed != nil:
		wr.lanes = w.allowed[:len(batch)]
		w.lanes.hold(wr.lanes)
	case w.lanes != nil:
		w.solo++
	}
	w.writes[seq] = wr
	w.metrics.Flight(w.ledger.inFlight, w.limit.current())
	w.work.start(writeJob{seq: seq, batch: batch})
}

func (w *writers) events() <-chan writeEvent { return w.reports }

func (w *writers) handle(e writeEvent, now time.Time) progress {
	if e.sent {
		return w.sentAcks(e.err)
	}
	return w.settled(e, now)
}

// settled takes what a Write settled: its acks into the ledger, and, if
// it ended, its lanes free and its duration for the limit and the pace.
func (w *writers) settled(e writeEvent, now time.Time) progress {
	wr := w.writes[e.seq]
	done, err := w.ledger.settle(e.seq, e.acks, e.ended)
	if err != nil {
		return progress{err: err}
	}
	p := progress{done: done}
	switch {
	case e.pushedBack:
		if !wr.pushedBack {
			wr.pushedBack = true
			w.retrying++
		}
		w.limit.pushed()
	case e.ended:
		if wr.pushedBack {
			w.retrying--
		}
		w.work.finished()
		delete(w.writes, e.seq)
		switch {
		case wr.lanes != nil:
			w.lanes.release(wr.lanes)
		case w.lanes != nil:
			w.solo--
		}
		took := now.Sub(wr.began)
		w.lastTook = took
		w.limit.ended(wr.size, took, now, wr.complete, wr.pushedBack)
		// The pace is the flow's: the Writes' records per second with as
		// many in flight as the limit allows.
		p.paced, p.took = wr.size*w.limit.current(), took
	}
	w.metrics.Flight(w.ledger.inFlight, w.limit.current())
	if w.readySince.IsZero() && w.ledger.hasReady() {
		w.readySince = now
	}
	return p
}

// sentAcks takes the end of the Send in flight: its records are through,
// and the acks ready meanwhile go next.
func (w *writers) sentAcks(err error) progress {
	if err != nil {
		w.sendErr = fmt.Errorf("send acks to Conduit: %w", err)
		return progress{err: w.sendErr}
	}
	return progress{through: w.ledger.sentAll()}
}

// ackLinger is the longest acks ready wait for the acks of a Write in
// flight to go with them in one message, and only while Writes take less
// than half of it: a busy destination that writes small batches fast
// (sdk.batch.size 1 under load) sends its acks a few Writes at a time, not
// in a message per Write, each of which costs the plugin and Conduit a
// gRPC message; one whose Writes take longer, or that has no Write in
// flight, sends them at once.
const ackLinger = time.Millisecond

// lingers reports whether acks ready may wait for those of a Write in
// flight: one is, none waits to retry, and the last took less than half of
// ackLinger.
func (w *writers) lingers() bool {
	return w.ledger.inFlight > 0 && w.retrying == 0 && w.lastTook > 0 && 2*w.lastTook < ackLinger
}

// after starts a Send of the acks ready, unless one is in flight, or they
// linger for the acks of a Write in flight (see ackLinger): then it
// returns when they go at the latest.
func (w *writers) after(now time.Time) (wake time.Time) {
	if w.sendErr != nil || w.ledger.sendingNow() || !w.ledger.hasReady() {
		return time.Time{}
	}
	if until := w.readySince.Add(ackLinger); w.lingers() && now.Before(until) {
		return until
	}
	acks, _ := w.ledger.next()
	w.sends <- acks // never waits: at most one Send is in flight
	w.readySince = time.Time{}
	return time.Time{}
}

// idle reports whether no Write is in flight and every ack ready is sent,
// or can no longer be.
func (w *writers) idle() bool {
	if w.sendErr != nil {
		return w.ledger.inFlight == 0
	}
	return w.ledger.idle() && !w.ledger.sendingNow()
}

func (w *writers) close() {
	w.work.close()
	close(w.sends)
	<-w.sent
}
