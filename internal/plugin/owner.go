package plugin

import (
	"context"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/metrics"
)

// owner is one Run's owner loop, of either role. A reader puts records in
// the inbox: a destination's receives them from Conduit, a source's reads
// them from the connector. The owner alone touches the batcher: it
// collects everything waiting in the inbox at once, while the hold bound
// has room, and hands its flow a batch whenever one is due and the flow
// has room for it (see flow). When nothing else happens, it waits for the
// batch's delay.
//
// The loop's state is in the fields, which only run's goroutine touches;
// the loop is one select, and each event has a method of its own: collect
// (the inbox has records), progressed (the flow reported), stopRequested,
// and the ends of ctx and of waiting. The clock is read at each wake-up,
// into now. What differs by role is the flow's.
type owner[E any] struct {
	ctx     context.Context // once done, no batch is handed out, and run ends with its cause
	inbox   *inbox
	batch   *batcher.Batcher[opencdc.Record]
	policy  batcher.Policy // batch's, for the inbox's limit (see aheadOf)
	flow    flow[E]
	metrics *metrics.Set       // nil: nothing is measured
	stops   <-chan stopRequest // Stop's requests: hand out without waiting, and say when a record is through
	timer   *time.Timer
	now     time.Time

	rate     flowRate
	slots    int   // the flow's slots, as the hold bound was last set for them
	quitting bool  // hand out nothing more: ctx is done, or the flow failed
	draining bool  // hand out without waiting: Stop was called, or the reader ended
	ended    bool  // the reader has ended, with endErr
	endErr   error //
	failed   error // the flow's first error
	stopping stopList
	spare    []opencdc.Record // the records last taken from the inbox, done with at the next take
	arrivals arrivals         // kept with metrics only

	// collected counts the records collected from the Run's start on;
	// while quiet, quietAt is what it was when everything collected was
	// last through the flow, with nothing held or waiting in the inbox
	// (see dueBatch.lone). A Run starts quiet, at 0: records that come
	// before the loop first looks are as lone as those after.
	collected int
	quietAt   int
	quiet     bool
}

// A flow is what a role does with the batches its owner hands out, on
// goroutines of its own that report to the owner with events of type E: a
// source's sends each batch to Conduit (see sender), a destination's
// writes each and sends their acks (see writers). Only the owner's loop
// calls it.
type flow[E any] interface {
	// take starts a batch of the records of the batch due, if the flow
	// has room for one now: it takes how many of them may go, from the
	// oldest on, with d.take, and reports whether it took any (an event
	// of the flow brings room).
	take(d dueBatch, now time.Time) bool
	// slots returns how many batches the flow may have at once now, which
	// sets the hold bound (see holdFor).
	slots() int
	// events is where the flow's goroutines report; handle handles what
	// they report, at now.
	events() <-chan E
	handle(e E, now time.Time) progress
	// after does what the flow put off until the owner has handed out
	// what is due, and returns when to be called again if nothing else
	// happens before (zero: no need).
	after(now time.Time) (wake time.Time)
	// idle reports whether nothing is in flight and nothing waits to be
	// sent, so that the loop may end.
	idle() bool
	// close ends the flow's goroutines, once it is idle.
	close()
}

// dueBatch is the batch an owner has due for its flow.
type dueBatch struct {
	records []opencdc.Record // the batch's records, oldest first
	// urgent says that the batch is complete or the owner drains, so
	// that waiting for it to grow gains nothing; complete that it
	// reached a limit of the batching policy or the hold bound.
	urgent, complete bool
	// lone says that the batch is all the owner has, and that its
	// records came once everything before them was through the flow, as
	// the records of a pipeline whose messages each wait for the last
	// one's ack (Conduit's v2 engine): nothing else is to be done until
	// the flow is through with it, as far as the owner can tell.
	lone bool
	take func(n int) []opencdc.Record // removes the n oldest records from the owner's batch and returns them
}

// progress is what an event of a flow moved on.
type progress struct {
	// done is how many batches the flow is done with, oldest first: no
	// longer held. through, if not 0, is how many records are through the
	// flow from the Run's start on: their acks (destination) or the
	// records themselves (source) sent.
	done, through int
	// handled is how many records a batch handled in took, which sets
	// the flow's rate; took is 0 if no batch was.
	handled int
	took    time.Duration
	err     error // the flow failed: nothing more is handed out
}

// newOwner returns the owner of a Run under policy p, holding what the
// flow's slots need (see holdFor), with an empty inbox that holds a batch
// until the flow's pace is measured; draining says a Stop came before.
func newOwner[E any](ctx context.Context, p batcher.Policy, m *metrics.Set, f flow[E], stops <-chan stopRequest, draining bool) (*owner[E], error) {
	b, err := batcher.New(p, holdFor(p, f.slots()), recordSize)
	if err != nil {
		return nil, err
	}
	return &owner[E]{ctx: ctx, inbox: newInbox(aheadOf(p, 0), m != nil), batch: b, policy: p, flow: f, slots: f.slots(), metrics: m, stops: stops, draining: draining, quiet: true}, nil
}

// run returns once the reader has ended with an error and everything it
// delivered has been through the flow, with that error (a reader that
// ends without one, a source's that Stop ended, leaves the loop running,
// for the acks); once ctx is done and the flow is idle, with ctx's cause;
// or once the flow failed and is idle, with its error.
func (o *owner[E]) run() error {
	defer o.flow.close()
	o.timer = time.NewTimer(time.Hour)
	o.timer.Stop()
	defer o.timer.Stop()

	ctxDone := o.ctx.Done()
	o.now = time.Now()
	for {
		o.handOut()
		wake := o.flow.after(o.now)
		if done, err := o.finished(); done {
			return err
		}
		o.noteQuiet()
		var collect chan struct{}
		if !o.ended && !o.quitting && o.batch.Room() {
			collect = o.inbox.ready
		}
		select {
		case <-collect:
			o.now = time.Now() // the records came now, not before the select
			o.collect()
		case e := <-o.flow.events():
			o.progressed(o.flow.handle(e, time.Now()))
		case r := <-o.stops:
			o.stopRequested(r)
		case <-ctxDone:
			ctxDone, o.quitting = nil, true
		case <-o.delay(wake):
		}
		o.now = time.Now()
	}
}

// handOut hands the flow due batches while it has room for them.
func (o *owner[E]) handOut() {
	for !o.quitting {
		why, drained, due := o.due()
		if !due {
			return
		}
		next := o.batch.Next()
		lone := o.quiet && o.collected-o.quietAt == len(next) && o.batch.Len() == len(next) && !o.inbox.waiting()
		if lone {
			// The flow may be through with the batch before take
			// returns: what comes meanwhile waits in the inbox, as much
			// as the hold bound would have collected.
			held, _ := o.batch.Held()
			o.inbox.setLimit(o.rate.inboxLimit(o.policy) + max(holdFor(o.policy, o.slots).Count-held, 0))
		}
		took := o.flow.take(dueBatch{records: next, urgent: drained || why.Complete(), complete: why.Complete(), lone: lone, take: func(n int) []opencdc.Record {
			collected := o.batch.Bytes()
			batch := o.batch.TakeAtMost(n)
			if o.metrics != nil {
				o.metrics.Batched(reasonLabel(why, drained), len(batch), collected-o.batch.Bytes(), o.now.Sub(o.arrivals.take(len(batch))))
			}
			return batch
		}}, o.now)
		if lone {
			o.inbox.setLimit(o.rate.inboxLimit(o.policy))
		}
		if !took {
			return // an event of the flow brings room
		}
		o.quiet = false
	}
}

// noteQuiet notes the records collected so far as through, if everything
// collected is through the flow and nothing is held or waits in the
// inbox, for dueBatch.lone.
func (o *owner[E]) noteQuiet() {
	if !o.quiet && o.batch.Len() == 0 && o.flow.idle() && !o.inbox.waiting() {
		o.quiet, o.quietAt = true, o.collected
	}
}

// due reports whether a batch goes now, and why: as the batcher says, or,
// while draining, whatever is collected, drained then saying that the
// batch goes because the owner drains (Stop was called or the reader
// ended).
func (o *owner[E]) due() (why batcher.Reason, drained, due bool) {
	why, due = o.batch.Due(o.now)
	if o.draining && o.batch.Len() > 0 && (!due || !why.Complete()) {
		return why, true, true
	}
	return why, false, due
}

// reasonLabel is the metrics' name for why a batch went: stop for a
// batch drained.
func reasonLabel(why batcher.Reason, drained bool) string {
	switch {
	case drained:
		return metrics.ReasonStop
	case why == batcher.Size:
		return metrics.ReasonSize
	case why == batcher.Bytes:
		return metrics.ReasonBytes
	case why == batcher.Full:
		return metrics.ReasonHold
	case why == batcher.Delay:
		return metrics.ReasonDelay
	}
	return metrics.ReasonGroupCommit
}

// finished reports whether the loop ends, and with what (see run).
func (o *owner[E]) finished() (bool, error) {
	switch {
	case !o.flow.idle():
		return false, nil
	case o.failed != nil:
		return true, o.failed
	case o.quitting:
		return true, context.Cause(o.ctx)
	case o.ended && o.endErr != nil && o.batch.Len() == 0:
		return true, o.endErr
	}
	return false, nil
}

// delay returns what fires once the batch collected is due by its delay,
// or at wake, whichever comes first: nil if nothing waits so. A batch due
// already waits for the flow's room, which an event brings.
func (o *owner[E]) delay(wake time.Time) <-chan time.Time {
	d, ok := time.Duration(0), false
	if !o.quitting && !o.draining {
		d, ok = o.batch.Wait(o.now)
		ok = ok && d > 0
	}
	if !wake.IsZero() && (!ok || wake.Sub(o.now) < d) {
		d, ok = max(wake.Sub(o.now), 0), true
	}
	if !ok {
		return nil
	}
	o.timer.Reset(d)
	return o.timer.C
}

// collect collects everything waiting in the inbox.
func (o *owner[E]) collect() {
	t := o.inbox.take(o.spare)
	recs := t.records
	o.spare = recs
	o.collected += len(recs)
	for i, r := range recs {
		o.batch.AddSized(r, t.sizes[i], o.now)
	}
	if o.metrics != nil && len(recs) > 0 {
		o.metrics.In(len(recs))
		o.metrics.Held(o.batch.Held())
		for _, a := range t.came {
			o.arrivals.add(a.n, a.at)
		}
	}
	o.stopping.collected(recs)
	if t.ended {
		// What was delivered goes on while ctx lasts; once it is done,
		// acks and records can no longer reach Conduit.
		o.ended, o.endErr, o.draining = true, t.err, true
		o.quitting = o.quitting || o.ctx.Err() != nil
	}
}

// progressed notes what an event of the flow moved on: the batches
// through no longer held, the Stops waiting for them released, the pace,
// and the flow's failure.
func (o *owner[E]) progressed(p progress) {
	for range p.done {
		o.batch.Done()
	}
	if p.done > 0 {
		o.metrics.Held(o.batch.Held())
	}
	if p.through > 0 {
		o.stopping.reached(p.through)
	}
	if p.took > 0 {
		if l, changed := o.rate.measured(p.handled, p.took, o.policy); changed {
			o.inbox.setLimit(l)
		}
	}
	if p.err != nil && o.failed == nil {
		o.failed, o.quitting = p.err, true
	}
	if n := o.flow.slots(); n != o.slots {
		o.slots = n
		_ = o.batch.SetHold(holdFor(o.policy, n)) // holdFor's limits are never negative
	}
}

// stopRequested has batches go without waiting from now on, and closes
// r.done once the record at r.last is through the flow.
func (o *owner[E]) stopRequested(r stopRequest) {
	o.draining = true
	o.stopping.add(r)
}

// flowRate is how fast the flow handles records while busy, which sets
// how many records its reader may take ahead of the owner (see aheadOf).
type flowRate struct {
	perSecond float64 // smoothed; 0 until measured
	lead      int     // the inbox's limit as last set; 0: as newInbox set it
}

// inboxLimit returns the inbox's limit for the pace measured so far under
// policy.
func (p *flowRate) inboxLimit(policy batcher.Policy) int {
	if p.lead == 0 {
		return aheadOf(policy, 0)
	}
	return p.lead
}

// measured notes a batch of n records that took took under policy p, and
// returns the inbox's limit for the new pace and whether it changed.
func (p *flowRate) measured(n int, took time.Duration, policy batcher.Policy) (limit int, changed bool) {
	if took <= 0 {
		return p.lead, false
	}
	rate := float64(n) / took.Seconds()
	if p.perSecond == 0 {
		p.perSecond = rate
	}
	p.perSecond += (rate - p.perSecond) / 4
	limit = aheadOf(policy, p.perSecond)
	changed, p.lead = limit != p.lead, limit
	return limit, changed
}

// arrivals are when the records collected and not yet in a batch came, in
// runs of records that came together, oldest first.
type arrivals struct {
	runs []arrival
	head int
}

type arrival struct {
	n  int
	at time.Time
}

// add notes n records that came at at.
func (a *arrivals) add(n int, at time.Time) { a.runs = append(a.runs, arrival{n, at}) }

// take removes the n oldest records and returns when the oldest came.
func (a *arrivals) take(n int) time.Time {
	if a.head == len(a.runs) {
		return time.Time{}
	}
	oldest := a.runs[a.head].at
	for n > 0 && a.head < len(a.runs) {
		r := &a.runs[a.head]
		k := min(n, r.n)
		r.n -= k
		n -= k
		if r.n == 0 {
			a.head++
		}
	}
	switch {
	case a.head == len(a.runs):
		a.runs, a.head = a.runs[:0], 0
	case a.head >= 64 && a.head >= len(a.runs)/2:
		a.runs, a.head = a.runs[:copy(a.runs, a.runs[a.head:])], 0
	}
	return oldest
}
