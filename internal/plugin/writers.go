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
	procs    procs
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

// writeJob is a batch to write, the seq-th Write; made, if not nil, is
// its first Write, made on the owner's goroutine (see writeHere).
type writeJob struct {
	seq   uint64
	batch []opencdc.Record
	made  *attempt
}

// writeEvent is what a Write settled, or the end of a Send.
type writeEvent struct {
	seq        uint64
	acks       []ack
	ended      bool // the Write ended: acks are its last
	here       bool // it ended on the owner's goroutine, no worker's (see writeHere)
	pushedBack bool // it met a retryable error, and waits to try again
	sent       bool // not a Write's: the Send in flight ended, with err
	err        error
}

// newWriters returns the writers of a destination; setProcs, if not nil,
// sets the process's GOMAXPROCS (see procs).
func newWriters(ctx context.Context, o outcomes, c Concurrency, m *metrics.Set, setProcs func(int) int, sendAcks func([]ack) error) *writers {
	w := &writers{ctx: ctx, outcomes: o, metrics: m, limit: newLimiter(c), procs: procs{set: setProcs}}
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
	var acks []ack
	if job.made != nil {
		acks = o.goOn(w.ctx, job.batch, *job.made)
	} else {
		acks = o.writeAll(w.ctx, job.batch)
	}
	w.reports <- writeEvent{seq: job.seq, acks: acks, ended: true}
}

// take starts a Write of the records of the batch due that may go, if
// another may start: the limit has room, and no Write that went alone is
// in flight. With lanes, while more than one Write may be in flight,
// those before the first that must follow a record in flight go (see
// lanes); a Write that may be the only one in flight goes alone, its
// records in no lane: none can be out of order behind it, and no Write
// starts beside it. A lone batch's first Write, with nothing in flight,
// is made before take returns (see writeHere).
func (w *writers) take(d dueBatch, now time.Time) bool {
	l := &w.acks.ledger
	if l.inFlight >= w.limit.current() || l.anyInFlight(func(x *write) bool { return x.alone }) {
		return false
	}
	here := d.lone && l.inFlight == 0
	n, claims := len(d.records), []lane(nil)
	if w.lanes != nil && w.limit.current() > 1 && !here {
		n, claims = w.lanes.free(d.records)
	}
	if n == 0 {
		return false
	}
	batch := d.take(n)
	w.procs.batch(here)
	wr := write{size: len(batch), began: now, complete: d.complete, alone: w.lanes != nil && claims == nil}
	if claims != nil {
		wr.lanes = claims[:len(batch)]
		w.lanes.claim(wr.lanes)
	}
	seq := l.open(wr)
	w.metrics.Flight(l.inFlight, w.limit.current())
	if here {
		w.writeHere(writeJob{seq: seq, batch: batch})
	} else {
		w.work.start(writeJob{seq: seq, batch: batch})
	}
	return true
}

// writeHere makes the first Write of job's batch on the owner's
// goroutine. It is for a lone batch with nothing else in flight (see
// dueBatch.lone), where the owner has nothing else to do meanwhile but
// take more records, which wait in the inbox then: the Write costs no
// hand-off to a worker and back. If it wrote every record, its acks are
// reported at once; else the batch goes on to a worker, as any Write's,
// for the retries and Writes its outcome calls for, so that the owner
// does not wait for them. A Stop waits for the Write, as for its acks,
// and Teardown's cancel of the Writes reaches it as any Write.
func (w *writers) writeHere(job writeJob) {
	made := w.outcomes.first(w.ctx, job.batch)
	if !made.wroteAll() {
		job.made = &made
		w.work.start(job)
		return
	}
	// Nothing else is in flight: reports has room.
	w.reports <- writeEvent{seq: job.seq, acks: w.outcomes.acks(made), ended: true, here: true}
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
		if !e.here {
			w.work.finished()
		}
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
	w.procs.restore()
	w.work.close()
	w.acks.close()
}
