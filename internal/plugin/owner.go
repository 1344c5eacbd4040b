package plugin

import (
	"context"
	"sync"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/metrics"
)

// owner is one Run's owner loop, of either role. A reader puts records in
// the inbox: a destination's receives them from Conduit, a source's reads
// them from the connector. The owner alone touches the batcher: it takes
// everything waiting in the inbox at once, while the hold bound has room,
// and hands the worker a batch whenever the worker may take one more job
// and a batch is due (see worker): a source's one at a time, a
// destination's as many at once as its Concurrency and the limiter allow.
// When nothing else happens, it waits for the batch's delay.
//
// The loop's state is in the fields, which only run's goroutine touches;
// the loop is one select, and each event has a method of its own: took
// (the inbox had records), worked (a job ended), stopRequested, and the
// ends of ctx and of waiting. The clock is read at each wake-up, into now.
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
	limit   *limiter        // how many jobs the worker may have at once
	byKey   bool            // a record goes to the worker only once no job it has holds the record's key

	work    chan job       // to the workers waiting for a job
	results chan result    // from the workers, one a job
	pushes  chan struct{}  // holds a notice once a Write met a retryable error
	workers sync.WaitGroup // the workers' goroutines
	idle    int            // workers waiting for a job
	timer   *time.Timer
	now     time.Time

	flights  []flight       // the jobs handed out, in order, up to the first not done
	keys     map[uint64]int // with byKey, the records of the jobs not done, by key hash
	seq      uint64         // the next batch's sequence number
	handed   int            // records handed to the worker
	pace     pace
	kept     keptRecords
	halted   bool  // hand out nothing more: ctx is done, or the worker failed
	draining bool  // hand out without waiting: Stop was called, or the reader ended
	ended    bool  // the reader has ended, with endErr
	endErr   error //
	workErr  error // the worker's first error
	stopping stopList
	spare    []opencdc.Record // the records last taken from the inbox, done with at the next take
	arrivals arrivals         // kept with metrics only
}

// flight is a job handed to the worker and not yet done, or done before an
// earlier one.
type flight struct {
	job
	end   int       // records handed to the worker up to and including the job's
	since time.Time // when it was handed out
	keys  []uint64  // with byKey, its records' key hashes (0: none)
	done  bool
}

// result is how a job ended, which its worker goroutine reports.
type result struct {
	kind       jobKind
	seq        uint64
	pushedBack bool // a Write met a retryable error
	err        error
}

// newOwner returns the owner of a Run under policy p, with an empty inbox
// that holds a batch until the worker's pace is measured; the worker may
// have as many jobs at once as c allows (one, if c is zero). drain may be
// nil.
func newOwner(ctx context.Context, p batcher.Policy, c Concurrency, m *metrics.Set, w worker, stops <-chan stopRequest, drain <-chan struct{}) (*owner, error) {
	b, err := batcher.New(p, holdFor(p, max(c.Max, 1)), recordSize)
	if err != nil {
		return nil, err
	}
	o := &owner{ctx: ctx, inbox: newInbox(aheadOf(p, 0)), batch: b, policy: p, worker: w, metrics: m, stops: stops, drain: drain, limit: newLimiter(c)}
	o.keeper, _ = w.(ackKeeper)
	if o.byKey = c.ByKey && o.limit.max > 1; o.byKey {
		o.keys = map[uint64]int{}
	}
	return o, nil
}

// run returns once the reader has ended with an error and everything it
// delivered has been through the worker, with that error (a reader that
// ends without one, a source's that Stop ended, leaves the loop running,
// for the acks); once ctx is done and no job is left, with ctx's cause;
// or once a job failed and no other is left, with its error.
func (o *owner) run() error {
	// Neither a worker reporting nor the owner handing an idle worker a
	// job ever waits: there are at most limit.max workers, each with at
	// most one job.
	o.work = make(chan job, o.limit.max)
	o.results = make(chan result, o.limit.max+1)
	o.pushes = make(chan struct{}, 1)
	defer o.workers.Wait()
	defer close(o.work) // run ends with no job in flight: every worker waits for one
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
		case r := <-o.results:
			o.worked(r)
		case <-o.pushes:
			o.limit.pushed()
			o.metrics.Flight(len(o.flights), o.limit.current())
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

// handOut gives the worker jobs while it may take more and there are
// any: the acks it kept, before anything waits or the loop ends, whatever
// ended it (the stream may still carry them); or due batches.
func (o *owner) handOut() {
	for {
		if len(o.flights) > 0 && o.flights[0].kind == sendKept {
			return // the kept acks go alone: nothing starts beside them (see worked)
		}
		reason, due := o.due()
		if len(o.flights) >= o.limit.current() {
			if due && !o.halted && fullBatch(reason) {
				o.limit.waited()
			}
			return
		}
		switch {
		case o.kept.count > 0 && (o.halted || !due): // acks are kept one job at a time
			if len(o.flights) == 0 { // and sent alone, also once the limit has grown
				o.give(job{kind: sendKept}, nil)
			}
		case due && !o.halted && o.giveBatch(reason):
			continue
		}
		return
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

// fullBatch reports whether a batch due for reason can take no more
// records: it has sdk.batch.size records or sdk.batch.bytes bytes, or the
// hold bound is reached. Batches grow before Writes multiply: a batch that
// is not full when the Writes in flight end goes with what came meanwhile
// (group commit), and only full ones that wait for most Writes ask for
// another Write.
func fullBatch(reason string) bool {
	return reason == metrics.FlushSize || reason == metrics.FlushBytes || reason == metrics.FlushHold
}

// flushReasons are the metrics' flush reasons by the batcher's.
var flushReasons = [...]string{
	batcher.Size:   metrics.FlushSize,
	batcher.Bytes:  metrics.FlushBytes,
	batcher.Full:   metrics.FlushHold,
	batcher.Delay:  metrics.FlushDelay,
	batcher.AtOnce: metrics.FlushGroupCommit,
}

// giveBatch hands the worker the next batch, due for reason, and reports
// whether there was one: with byKey, only the records before the first
// whose key a job not done holds. A keeper keeps its acks while the next
// batch is at hand and both go soon (see keepAcks), one job at a time.
func (o *owner) giveBatch(reason string) bool {
	n, keys := o.batch.Len(), []uint64(nil)
	if o.byKey {
		if n, keys = o.freeOfKeys(); n == 0 {
			return false
		}
	}
	collected := o.batch.Bytes()
	batch := o.batch.TakeAtMost(n)
	if o.metrics != nil {
		o.metrics.Flushed(reason, len(batch), collected-o.batch.Bytes(), o.now.Sub(o.arrivals.take(len(batch))))
	}
	kind := handleBatch
	if o.keeper != nil && o.limit.current() == 1 && !o.draining && (o.batch.Len() > 0 || o.inbox.waiting()) && keepAcks(o.kept.waited(o.now), o.pace.last) {
		kind = keepBatch
	}
	o.limit.started(o.batch.Len() > 0 || o.inbox.waiting())
	o.give(job{kind: kind, batch: batch, seq: o.seq}, keys[:min(len(keys), len(batch))])
	o.seq++
	return true
}

// freeOfKeys returns how many of the records collected, from the oldest
// on, have a key that no job not done holds, or none, and each one's key
// hash (0: none).
func (o *owner) freeOfKeys() (n int, keys []uint64) {
	pending := o.batch.Pending()
	if o.policy.Count > 0 {
		pending = pending[:min(len(pending), o.policy.Count)]
	}
	keys = make([]uint64, 0, len(pending))
	for _, r := range pending {
		h := keyHash(r)
		if h != 0 && o.keys[h] > 0 {
			break
		}
		keys = append(keys, h)
	}
	return len(keys), keys
}

// give hands the worker job j, whose records have the key hashes keys
// (with byKey): to a worker goroutine waiting for a job, or to a new one
// if none waits (see workOn).
func (o *owner) give(j job, keys []uint64) {
	o.handed += len(j.batch)
	o.flights = append(o.flights, flight{job: j, end: o.handed, since: o.now, keys: keys})
	for _, h := range keys {
		if h != 0 {
			o.keys[h]++
		}
	}
	o.metrics.Flight(len(o.flights), o.limit.current())
	if o.limit.adaptive {
		j.pushedBack = func() { notify(o.pushes) }
	}
	if o.idle > 0 {
		o.idle--
		o.work <- j
		return
	}
	o.workers.Add(1)
	go o.workOn(j)
}

// workOn does job j, reports how it ended, and then does each job the owner
// hands it, until run ends. A worker goroutine lives as long as the loop,
// as many as jobs were ever in flight at once: a goroutine per job would
// start each Write on a new, small stack and grow it anew, which costs
// tens of µs a Write (a one-record Write of the Postgres destination),
// on the path of every record.
func (o *owner) workOn(j job) {
	defer o.workers.Done()
	for ok := true; ok; j, ok = <-o.work {
		pushedBack, err := o.do(j)
		o.results <- result{kind: j.kind, seq: j.seq, pushedBack: pushedBack, err: err}
	}
}

// do does job j; it runs on a worker goroutine (see workOn).
func (o *owner) do(j job) (pushedBack bool, err error) {
	if j.kind == sendKept {
		return false, o.keeper.sendKept()
	}
	return o.worker.handle(j)
}

// finished reports whether the loop ends, and with what (see run).
func (o *owner) finished() (bool, error) {
	switch {
	case len(o.flights) > 0:
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
// when nothing else will hand it out: nil if nothing waits so. A batch due
// already waits for a job to end (the worker has as many as it may, or,
// with byKey, one holds its first record's key).
func (o *owner) delay() <-chan time.Time {
	if len(o.flights) >= o.limit.current() || o.halted || o.draining {
		return nil
	}
	d, ok := o.batch.Wait(o.now)
	if !ok || d == 0 {
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

// worked notes the end of a job: its keys free for later records, its
// duration for the pace and the limit; and, once every job before it is
// done too, its records through the worker.
func (o *owner) worked(r result) {
	now := time.Now()
	o.idle++           // r's goroutine waits for the next job
	f := &o.flights[0] // a sendKept job is the only one
	if r.kind != sendKept {
		f = &o.flights[r.seq-o.flights[0].seq] // batches are in flight alone, in seq order
	}
	f.done = true
	for _, h := range f.keys {
		if h == 0 {
			continue
		}
		if o.keys[h]--; o.keys[h] == 0 {
			delete(o.keys, h)
		}
	}
	if f.kind != sendKept {
		took := now.Sub(f.since)
		if l, changed := o.pace.measured(len(f.batch)*o.limit.current(), took, o.policy); changed {
			o.inbox.setLimit(l)
		}
		o.limit.ended(took, r.pushedBack)
	}
	if r.err != nil && o.workErr == nil {
		o.workErr, o.halted = r.err, true
	}
	for len(o.flights) > 0 && o.flights[0].done {
		o.through(o.flights[0], now)
		o.flights = o.flights[1:]
	}
	o.metrics.Flight(len(o.flights), o.limit.current())
}

// through notes a job done after every job before it: its batch no longer
// held, and its records' acks sent, with those kept before, unless it
// keeps them too.
func (o *owner) through(f flight, now time.Time) {
	if f.kind != sendKept {
		o.batch.Done()
		o.metrics.Held(o.batch.Held())
	}
	if f.kind == keepBatch {
		o.kept.add(len(f.batch), now)
		return
	}
	o.kept = keptRecords{}
	o.stopping.reached(f.end)
}

// stopRequested has batches go without waiting from now on, and closes
// r.done once the record at r.last has been through the worker.
func (o *owner) stopRequested(r stopRequest) {
	o.draining = true
	o.stopping.add(r)
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
