package plugin

import (
	"bytes"
	"context"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/metrics"
)

// owner is one Run's owner loop, of either role. A reader puts records in
// the inbox: a destination's receives them from Conduit, a source's reads
// them from the connector. The owner alone touches the batcher: it takes
// everything waiting in the inbox at once, while the hold bound has room,
// and hands the worker a batch whenever the worker is free and a batch is
// due (see worker). When nothing else happens, it waits for the batch's
// delay.
//
// The loop's state is in the fields, which only run's goroutine touches;
// the loop is one select, and each event has a method of its own: took
// (the inbox had records), worked (the worker finished a job),
// stopRequested, and the ends of ctx and of waiting. The clock is read at
// each wake-up, into now.
type owner struct {
	ctx     context.Context // once done, no batch goes to the worker, and run ends with its cause
	inbox   *inbox
	batch   *batcher.Batcher[opencdc.Record]
	policy  batcher.Policy // batch's, for the inbox's limit (see aheadOf)
	worker  worker
	keeper  ackKeeper    // the worker, if it can keep acks; nil otherwise
	metrics *metrics.Set // nil: nothing is measured
	stops   <-chan stopRequest
	drain   <-chan struct{} // closed once batches go without waiting (Stop was called); nil: never

	jobs    chan job   // to the worker's goroutine
	results chan error // from it, one a job
	timer   *time.Timer
	now     time.Time

	busy     bool      // the worker has a job
	job      job       // that job
	jobSince time.Time // when the worker got it
	pace     pace
	kept     keptRecords
	halted   bool  // hand out nothing more: ctx is done, or the worker failed
	draining bool  // hand out without waiting: Stop was called, or the reader ended
	ended    bool  // the reader has ended, with endErr
	endErr   error //
	workErr  error // the worker's error
	stopping stopList
	spare    []opencdc.Record // the records last taken from the inbox, done with at the next take
	arrivals arrivals         // kept with metrics only
}

// newOwner returns the owner of a Run under policy p, with an empty inbox
// that holds a batch until the worker's pace is measured. drain may be nil.
func newOwner(ctx context.Context, p batcher.Policy, m *metrics.Set, w worker, stops <-chan stopRequest, drain <-chan struct{}) (*owner, error) {
	b, err := batcher.New(p, holdFor(p), recordSize)
	if err != nil {
		return nil, err
	}
	keeper, _ := w.(ackKeeper)
	return &owner{ctx: ctx, inbox: newInbox(aheadOf(p, 0)), batch: b, policy: p, worker: w, keeper: keeper, metrics: m, stops: stops, drain: drain}, nil
}

// run returns once the reader has ended with an error and everything it
// delivered has been through the worker, with that error (a reader that
// ends without one, a source's that Stop ended, leaves the loop running,
// for the acks); once ctx is done and the worker idle, with ctx's cause;
// or once the worker failed, with its error.
func (o *owner) run() error {
	o.jobs, o.results = make(chan job), make(chan error, 1)
	workerDone := make(chan struct{})
	go func() {
		defer close(workerDone)
		for j := range o.jobs {
			o.results <- o.do(j)
		}
	}()
	defer func() { close(o.jobs); <-workerDone }()
	o.timer = time.NewTimer(time.Hour)
	o.timer.Stop()
	defer o.timer.Stop()

	ctxDone := o.ctx.Done()
	o.now = time.Now()
	for {
		o.handOut()
		if done, err := o.finished(); done {
			return err
		}
		var take chan struct{}
		if !o.ended && !o.halted && o.batch.Room() {
			take = o.inbox.ready
		}
		select {
		case <-take:
			o.now = time.Now() // the records came now, not before the select
			o.took()
		case err := <-o.results:
			o.worked(err)
		case r := <-o.stops:
			o.stopRequested(r)
		case <-o.drain:
			o.drain, o.draining = nil, true
		case <-ctxDone:
			ctxDone, o.halted = nil, true
		case <-o.delay():
		}
		o.now = time.Now()
	}
}

// handOut gives the worker a job, if it is free and there is one: the
// acks it kept, before anything waits or the loop ends, whatever ended it
// (the stream may still carry them); or a due batch.
func (o *owner) handOut() {
	if o.busy {
		return
	}
	reason, due := o.due()
	switch {
	case o.kept.count > 0 && (o.halted || !due):
		o.give(job{kind: sendKept})
	case due && !o.halted:
		o.giveBatch(reason)
	}
}

// due reports whether a batch goes now, and why, as the flush reason of
// the metrics: as the batcher says, and, while draining, whatever is
// collected.
func (o *owner) due() (reason string, due bool) {
	why, due := o.batch.Due(o.now)
	if o.draining && o.batch.Len() > 0 && (!due || why == batcher.AtOnce || why == batcher.Delay) {
		return metrics.FlushStop, true
	}
	return flushReasons[why], due
}

// flushReasons are the metrics' flush reasons by the batcher's.
var flushReasons = [...]string{
	batcher.Size:   metrics.FlushSize,
	batcher.Bytes:  metrics.FlushBytes,
	batcher.Full:   metrics.FlushHold,
	batcher.Delay:  metrics.FlushDelay,
	batcher.AtOnce: metrics.FlushGroupCommit,
}

// giveBatch hands the worker the next batch, due for reason. A keeper
// keeps its acks while the next batch is at hand and both go soon (see
// keepAcks).
func (o *owner) giveBatch(reason string) {
	collected := o.batch.Bytes()
	batch := o.batch.Take()
	if o.metrics != nil {
		o.metrics.Flushed(reason, len(batch), collected-o.batch.Bytes(), o.now.Sub(o.arrivals.take(len(batch))))
	}
	kind := handleBatch
	if o.keeper != nil && !o.draining && (o.batch.Len() > 0 || o.inbox.waiting()) && keepAcks(o.kept.waited(o.now), o.pace.last) {
		kind = keepBatch
	}
	o.give(job{kind: kind, batch: batch})
}

func (o *owner) give(j job) {
	o.job, o.busy, o.jobSince = j, true, o.now
	o.jobs <- j
}

// do does job j; it runs on the worker's goroutine.
func (o *owner) do(j job) error {
	switch j.kind {
	case keepBatch:
		return o.keeper.handleKeeping(j.batch)
	case sendKept:
		return o.keeper.sendKept()
	}
	return o.worker.handle(j.batch)
}

// finished reports whether the loop ends, and with what (see run).
func (o *owner) finished() (bool, error) {
	switch {
	case o.busy:
		return false, nil
	case o.workErr != nil:
		return true, o.workErr
	case o.halted:
		return true, context.Cause(o.ctx)
	case o.ended && o.endErr != nil && o.batch.Len() == 0 && o.kept.count == 0:
		return true, o.endErr
	}
	return false, nil
}

// delay returns what fires once the batch collected is due by its delay,
// when nothing else will hand it out: nil if nothing waits so.
func (o *owner) delay() <-chan time.Time {
	if o.busy || o.halted || o.draining {
		return nil
	}
	d, ok := o.batch.Wait(o.now)
	if !ok {
		return nil
	}
	o.timer.Reset(d)
	return o.timer.C
}

// took collects everything waiting in the inbox.
func (o *owner) took() {
	recs, sizes, end, err := o.inbox.take(o.spare)
	o.spare = recs
	for i, r := range recs {
		o.batch.AddSized(r, sizes[i], o.now)
	}
	if o.metrics != nil && len(recs) > 0 {
		o.metrics.In(len(recs))
		o.metrics.Held(o.batch.Held())
		o.arrivals.add(len(recs), o.now)
	}
	o.stopping.took(recs)
	if end {
		// What was delivered goes on while ctx lasts; once it is done,
		// acks and records can no longer reach Conduit.
		o.ended, o.endErr, o.draining = true, err, true
		o.halted = o.halted || o.ctx.Err() != nil
	}
}

// worked notes the end of the worker's job, with its error.
func (o *owner) worked(err error) {
	o.busy = false
	if o.job.kind != sendKept {
		n, now := len(o.job.batch), time.Now()
		if l, changed := o.pace.measured(n, now.Sub(o.jobSince), o.policy); changed {
			o.inbox.setLimit(l)
		}
		o.batch.Done()
		o.metrics.Held(o.batch.Held())
		o.kept.add(n, now)
	}
	if o.job.kind != keepBatch { // sent, with those kept before
		o.stopping.worked(o.kept.count)
		o.kept = keptRecords{}
	}
	o.job = job{}
	if err != nil {
		o.workErr, o.halted = err, true
	}
}

// stopRequested has batches go without waiting from now on, and closes
// r.done once the record at r.last has been through the worker.
func (o *owner) stopRequested(r stopRequest) {
	o.draining = true
	o.stopping.add(r)
}

// A job is what the owner hands the worker: a batch to handle, or the
// acks kept to send.
type job struct {
	kind  jobKind
	batch []opencdc.Record // nil for sendKept
}

type jobKind uint8

const (
	handleBatch jobKind = iota // handle the batch, sending its acks and any kept
	keepBatch                  // handle the batch, keeping its acks and any kept (an ackKeeper's)
	sendKept                   // send the acks kept (an ackKeeper's)
)

// A worker handles the batches the owner hands out, one at a time, on a
// goroutine of its own. A source's sends each to Conduit: the transport
// takes it at once while Conduit keeps up, and makes the worker wait while
// Conduit does not, so that a busy Conduit gets what was read meanwhile
// in one message. A destination's writes each and acks its records.
type worker interface {
	handle(batch []opencdc.Record) error
}

// An ackKeeper is a worker that can keep the acks of a batch and send them
// with the next batch's, in one message (a destination's, see keepAcks).
type ackKeeper interface {
	worker
	handleKeeping(batch []opencdc.Record) error
	sendKept() error
}

// keptRecords are the records through the worker whose acks it keeps.
type keptRecords struct {
	count int
	since time.Time // when the first of them came back
}

func (k *keptRecords) add(n int, now time.Time) {
	if k.count == 0 {
		k.since = now
	}
	k.count += n
}

// waited returns how long the first of them has waited at now.
func (k keptRecords) waited(now time.Time) time.Duration {
	if k.count == 0 {
		return 0
	}
	return now.Sub(k.since)
}

// pace is how fast the worker handles records while busy, which sets how
// many records its reader may take ahead of the owner (see aheadOf).
type pace struct {
	perSecond float64       // smoothed; 0 until measured
	last      time.Duration // how long the last batch took
	lead      int           // the inbox's limit as last set; 0: as newInbox set it
}

// measured notes a batch of n records that took took under policy p, and
// returns the inbox's limit for the new pace and whether it changed.
func (p *pace) measured(n int, took time.Duration, policy batcher.Policy) (limit int, changed bool) {
	if took <= 0 {
		return p.lead, false
	}
	p.last = took
	rate := float64(n) / took.Seconds()
	if p.perSecond == 0 {
		p.perSecond = rate
	}
	p.perSecond += (rate - p.perSecond) / 4
	limit = aheadOf(policy, p.perSecond)
	changed, p.lead = limit != p.lead, limit
	return limit, changed
}

// stopRequest asks the owner loop to hand batches out without waiting and
// to close done once the record at last has been through the worker
// (written and acked, or sent): at once if last is empty.
type stopRequest struct {
	last opencdc.Position
	done chan struct{}
}

// stopList are the Stops waiting for their record to be through the
// worker, and what the owner took and the worker finished, in records.
type stopList struct {
	waiting   []pendingStop
	taken     int // records taken from the inbox
	through   int // records through the worker, their acks sent
	lastTaken opencdc.Position
}

// pendingStop is a Stop waiting for the record at its position: upTo is
// how many records were taken from the inbox up to and including it, 0
// until it is taken.
type pendingStop struct {
	stopRequest
	upTo int
}

// add takes a Stop in, releasing it at once if its record is through.
func (l *stopList) add(r stopRequest) {
	s := pendingStop{stopRequest: r}
	if len(r.last) > 0 && bytes.Equal(r.last, l.lastTaken) {
		s.upTo = l.taken
	}
	l.waiting = append(l.waiting, s)
	l.release()
}

// took notes the records taken from the inbox.
func (l *stopList) took(recs []opencdc.Record) {
	for i := range l.waiting {
		if l.waiting[i].upTo > 0 {
			continue
		}
		for k, r := range recs {
			if bytes.Equal(r.Position, l.waiting[i].last) {
				l.waiting[i].upTo = l.taken + k + 1
			}
		}
	}
	l.taken += len(recs)
	if len(recs) > 0 {
		l.lastTaken = recs[len(recs)-1].Position
	}
}

// worked notes n more records through the worker, their acks sent.
func (l *stopList) worked(n int) {
	l.through += n
	l.release()
}

// release closes the Stops whose record is through the worker.
func (l *stopList) release() {
	kept := l.waiting[:0]
	for _, s := range l.waiting {
		if len(s.last) == 0 || (s.upTo > 0 && l.through >= s.upTo) {
			close(s.done)
			continue
		}
		kept = append(kept, s)
	}
	l.waiting = kept
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
