package plugin

import (
	"context"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/internal/metrics"
)

// writers is a destination's flow: it writes each batch the owner hands
// out and settles every record with one ack (see [outcomes]), as many
// Writes at once as the limiter allows, a record only once no Write in
// flight claims its key (with ByKey); the ack sender opens each Write
// handed out and sends the acks to Conduit in record order.
type writers struct {
	ctx      context.Context
	outcomes outcomes
	metrics  *metrics.Set

	limit    *limiter
	lanes    *lanes // nil: any record may go in any Write
	acks     *ackSender
	lastTook time.Duration // how long the last Write took

	work    *workers[writeJob]
	reports chan writeEvent
}

// write is a Write handed out, as the ledger keeps it from then on until
// its acks are sent.
type write struct {
	size       int
	began      time.Time
	lanes      []lane // its records' lanes, claimed; nil: it took none
	alone      bool   // its records in no lane: no Write starts beside it
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
	w := &writers{ctx: ctx, outcomes: o, metrics: m, limit: newLimiter(c)}
	if c.ByKey && w.limit.max > 1 {
		w.lanes = &lanes{claimed: map[uint64]claim{}}
	}
	// Every Write may report before it ends, a Send at once.
	w.reports = make(chan writeEvent, w.limit.max+1)
	w.acks = newAckSender(sendAcks, w.reports)
	w.work = newWorkers(w.limit.max, w.do)
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

// take starts a Write of the records of next that may go, if another may
// start: the limit has room, and no Write that went alone is in flight.
// With lanes, while more than one Write may be in flight, those before
// the first that must follow a record in flight go (see lanes); a Write
// that may be the only one in flight goes alone, its records in no lane:
// none can be out of order behind it, and no Write starts beside it.
func (w *writers) take(next []opencdc.Record, now time.Time, _, complete bool, take func(n int) []opencdc.Record) bool {
	l := &w.acks.ledger
	if l.inFlight >= w.limit.current() || l.anyInFlight(func(x *write) bool { return x.alone }) {
		return false
	}
	n, claims := len(next), []lane(nil)
	if w.lanes != nil && w.limit.current() > 1 {
		n, claims = w.lanes.free(next)
	}
	if n == 0 {
		return false
	}
	batch := take(n)
	wr := write{size: len(batch), began: now, complete: complete, alone: w.lanes != nil && claims == nil}
	if claims != nil {
		wr.lanes = claims[:len(batch)]
		w.lanes.claim(wr.lanes)
	}
	seq := l.open(wr)
	w.metrics.Flight(l.inFlight, w.limit.current())
	w.work.start(writeJob{seq: seq, batch: batch})
	return true
}

func (w *writers) slots() int { return w.limit.current() }

func (w *writers) events() <-chan writeEvent { return w.reports }

func (w *writers) handle(e writeEvent, now time.Time) progress {
	if e.sent {
		return w.acks.sentAcks(e.err)
	}
	return w.settled(e, now)
}

// settled takes what a Write settled: its acks to the ack sender, and, if
// it ended, its lanes free and its duration for the limit and the flow's rate.
func (w *writers) settled(e writeEvent, now time.Time) progress {
	var wr write // as it was before it settled, which may let the ledger forget it
	if p := w.acks.ledger.write(e.seq); p != nil {
		p.pushedBack = p.pushedBack || e.pushedBack
		wr = *p
	}
	done, err := w.acks.settle(e.seq, e.acks, e.ended, now)
	if err != nil {
		return progress{err: err}
	}
	p := progress{done: done}
	switch {
	case e.pushedBack:
		w.limit.pushed()
	case e.ended:
		w.work.finished()
		if wr.lanes != nil {
			w.lanes.release(wr.lanes)
		}
		took := now.Sub(wr.began)
		w.lastTook = took
		w.limit.ended(wr.size, took, now, wr.complete, wr.pushedBack)
		// The flow's rate: the Writes' records per second with as many in
		// flight as the limit allows.
		p.handled, p.took = wr.size*w.limit.current(), took
	}
	w.metrics.Flight(w.acks.ledger.inFlight, w.limit.current())
	return p
}

// lingers reports whether acks ready may wait for those of a Write in
// flight (see ackLinger): one is, none waits to retry, and the last took
// less than half of ackLinger.
func (w *writers) lingers() bool {
	l := &w.acks.ledger
	return l.inFlight > 0 && w.lastTook > 0 && 2*w.lastTook < ackLinger && !l.anyInFlight(func(x *write) bool { return x.pushedBack })
}

func (w *writers) after(now time.Time) (wake time.Time) { return w.acks.after(now, w.lingers()) }

func (w *writers) idle() bool { return w.acks.idle() }

func (w *writers) close() {
	w.work.close()
	w.acks.close()
}
