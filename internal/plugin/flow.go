package plugin

import (
	"bytes"
	"context"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/metrics"
)

// What a server holds ahead of its connector (destination) or of Conduit
// (source) when the batching policy sets no limit: enough for large batches
// and for collecting the next batch while one is written, little enough
// that records do not wait long behind it. Records in a plugin are latency:
// in Conduit's default engine they count as in flight from the source's
// read on.
const (
	defaultHoldCount = 2048
	defaultHoldBytes = 8 << 20
)

// holdFor returns the bound on what a server holds under policy p: two
// batches' worth, one being written while the next is collected. A
// server passes it by what its reader's inbox may hold when the owner takes
// it, and again by what the reader receives or reads after that: each less
// than 128 records and 128 KiB (inboxCount, inboxBytes) plus one message
// or Read.
func holdFor(p batcher.Policy) batcher.Hold {
	h := batcher.Hold{Count: defaultHoldCount, Bytes: defaultHoldBytes}
	if p.Count > 0 {
		h.Count = 2 * p.Count
	}
	if p.Bytes > 0 {
		h.Bytes = 2 * p.Bytes
	}
	return h
}

// aheadTime is how long what a reader has taken ahead of the owner keeps
// the worker busy, once the worker's pace is measured: long enough that a
// fast worker gets many records a wake-up, short enough that before a slow
// one records wait a few of its batches at most, not a fixed number of
// them (see aheadOf).
const aheadTime = time.Millisecond

// aheadOf returns how many records a reader may take ahead of the owner
// under policy p, for a worker that handles records at pace records per
// second: what it handles in aheadTime, at least a batch.
func aheadOf(p batcher.Policy, pace float64) int {
	return max(p.Count, int(pace*aheadTime.Seconds()+0.5))
}

// ackTogether reports whether the acks of the batch the worker takes now,
// and those it kept (the first of them waiting for waited), may wait for
// the next batch's, which is at hand, writes taking about last: only
// while all of them go within aheadTime. So a busy destination that
// writes small batches fast (sdk.batch.size 1 under load) sends its acks
// a few writes at a time, not in a message per record, at a cost of less
// than aheadTime; one whose writes take longer, or that has nothing more
// at hand, sends them as each Write returns.
func ackTogether(waited, last time.Duration) bool {
	return waited+2*last < aheadTime
}

// job is what the owner hands the worker: a batch, or nothing (nil
// records), which asks it to flush the acks it kept.
type job struct {
	records  []opencdc.Record
	holdAcks bool
}

// flow is one Run's owner loop, of either role. A reader puts records in
// the inbox: a destination's receives them from Conduit, a source's reads
// them from the connector. The owner alone touches the batcher: it takes
// everything waiting in the inbox at once, only while the hold bound has
// room, and hands the worker a batch whenever the worker is free and a
// batch is due. A destination's worker writes the batch and sends its
// acks; a source's sends it to Conduit. When nothing else happens, the
// owner waits for the batch's delay. It reads the clock once per wake-up.
type flow struct {
	ctx     context.Context // once done, no batch goes to the worker, and the loop ends with its cause
	inbox   *inbox
	batch   *batcher.Batcher[opencdc.Record]
	policy  batcher.Policy // batch's, for why a batch goes
	metrics *metrics.Set
	// work is the worker's call; an error ends the loop. With holdAcks, a
	// destination keeps the batch's acks to send with the next batch's,
	// which the owner asks for only while that batch is already at hand
	// and both go soon (see ackTogether); otherwise it sends them, and any
	// it kept, at once.
	work func(batch []opencdc.Record, holdAcks bool) error
	// flush, if set, is the worker's call that sends the acks it kept: the
	// owner calls it if nothing follows them after all (Stop, the loop's
	// end). nil: work never keeps acks.
	flush func() error
	stops <-chan stopRequest
	drain <-chan struct{} // closed once batches go without waiting (Stop was called); nil: never
	acks  *conduitAcks    // a source's: Conduit's acks, which a due batch may wait for; nil: none
}

// stopRequest asks the owner loop to hand batches out without waiting and
// to close done once the record at last has been through the worker
// (written and acked, or sent): at once if last is empty.
type stopRequest struct {
	last opencdc.Position
	done chan struct{}
}

// pendingStop is a Stop waiting for the record at its position: upTo is
// how many records were taken from the inbox up to and including it, 0
// until it is taken.
type pendingStop struct {
	stopRequest
	upTo int
}

// run returns once the reader has ended with an error and everything it
// delivered has been through the worker, with that error (a reader that
// ends without one, a source's that Stop ended, leaves the loop running,
// for the acks); once ctx is done and the worker idle, with ctx's cause;
// or once the worker failed, with its error.
func (f *flow) run() error {
	batches := make(chan job)
	results := make(chan error, 1)
	workerDone := make(chan struct{})
	go func() {
		defer close(workerDone)
		for j := range batches {
			if j.records == nil {
				results <- f.flush()
				continue
			}
			results <- f.work(j.records, j.holdAcks)
		}
	}()
	defer func() { close(batches); <-workerDone }()

	var (
		timer     = time.NewTimer(time.Hour)
		busy      bool // a batch is with the worker
		busyCount int  // its records
		busySince time.Time
		pace      float64       // records the worker handles per second while busy, smoothed; 0 until measured
		lead      int           // the inbox's limit as last set here; 0: as newInbox set it
		flushing  bool          // the worker is flushing, not working
		holding   bool          // the worker keeps the acks of the batch it has
		held      int           // records through the worker whose acks it keeps
		heldSince time.Time     // when the first of them came back
		lastTook  time.Duration // how long the last batch took
		halt      bool          // hand out nothing more: ctx is done, or the worker failed
		draining  bool          // hand out without waiting: Stop was called, or the reader ended
		ended     bool          // the reader has ended, with endErr
		endErr    error         //
		workErr   error         // the worker's error
		taken     int           // records taken from the inbox
		worked    int           // records through the worker
		lastTaken opencdc.Position
		stops     []pendingStop
		spare     []opencdc.Record // the records last taken from the inbox, done with at the next take
		ctxDone   = f.ctx.Done()
		drain     = f.drain
	)
	timer.Stop()
	defer timer.Stop()
	var arrivals arrivals // with metrics
	settle := func() {
		kept := stops[:0]
		for _, s := range stops {
			if len(s.last) == 0 || (s.upTo > 0 && worked >= s.upTo) {
				close(s.done)
				continue
			}
			kept = append(kept, s)
		}
		stops = kept
	}
	now := time.Now()
	for {
		var hold time.Duration // how much longer a due batch waits for Conduit's acks
		due := f.batch.Due(now) || (draining && f.batch.Len() > 0)
		// Kept acks go before anything waits or the loop ends, whatever
		// ended it: the stream may still carry them.
		if !busy && held > 0 && (halt || !due) {
			busy, busyCount, flushing, holding = true, 0, true, false
			batches <- job{}
			continue
		}
		if !busy && !halt && due {
			if hold = f.acks.holdBack(now, draining, f.batch.Complete()); hold == 0 {
				reason, bytes := f.reason(draining), f.batch.Bytes()
				batch := f.batch.Take()
				busy, busyCount, busySince = true, len(batch), now
				if f.metrics != nil {
					f.metrics.Flushed(reason, len(batch), bytes-f.batch.Bytes(), now.Sub(arrivals.take(len(batch))))
				}
				f.acks.sent(len(batch), now) // before its acks can come
				waited := time.Duration(0)
				if held > 0 {
					waited = now.Sub(heldSince)
				}
				atHand := f.batch.Len() > 0 || f.inbox.waiting()
				holding = f.flush != nil && !draining && atHand && ackTogether(waited, lastTook)
				batches <- job{records: batch, holdAcks: holding}
				continue
			}
		}
		if !busy {
			switch {
			case workErr != nil:
				return workErr
			case halt:
				return context.Cause(f.ctx)
			case ended && endErr != nil && f.batch.Len() == 0 && held == 0:
				return endErr
			}
		}
		var take chan struct{}
		if !ended && !halt && f.batch.Room() {
			take = f.inbox.ready
		}
		var wake <-chan time.Time
		switch {
		case hold > 0:
			timer.Reset(hold)
			wake = timer.C
		case !busy && !halt && !draining:
			if d, ok := f.batch.Wait(now); ok {
				timer.Reset(d)
				wake = timer.C
			}
		}
		select {
		case <-take:
			now = time.Now() // the select may have waited
			recs, sizes, end, err := f.inbox.take(spare)
			spare = recs
			for i, r := range recs {
				f.batch.AddSized(r, sizes[i], now)
			}
			if f.metrics != nil && len(recs) > 0 {
				f.metrics.In(len(recs))
				f.metrics.Held(f.batch.Held())
				arrivals.add(len(recs), now)
			}
			for i := range stops {
				if stops[i].upTo > 0 {
					continue
				}
				for k, r := range recs {
					if bytes.Equal(r.Position, stops[i].last) {
						stops[i].upTo = taken + k + 1
					}
				}
			}
			taken += len(recs)
			if len(recs) > 0 {
				lastTaken = recs[len(recs)-1].Position
			}
			if end {
				// What was delivered goes on while ctx lasts; once it is
				// done, acks and records can no longer reach Conduit.
				ended, endErr, draining = true, err, true
				halt = halt || f.ctx.Err() != nil
			}
			continue // now is read
		case err := <-results:
			busy = false
			if !flushing {
				if took := time.Since(busySince); took > 0 {
					lastTook = took
					measured := float64(busyCount) / took.Seconds()
					if pace == 0 {
						pace = measured
					}
					pace += (measured - pace) / 4
					if l := aheadOf(f.policy, pace); l != lead {
						f.inbox.setLimit(l)
						lead = l
					}
				}
				f.batch.Done()
				f.metrics.Held(f.batch.Held())
				if held == 0 {
					heldSince = time.Now()
				}
				held += busyCount
			}
			flushing = false
			if !holding { // sent, with those kept before
				worked += held
				held = 0
			}
			if err != nil {
				workErr, halt = err, true
			}
			settle()
		case r := <-f.stops:
			draining = true
			s := pendingStop{stopRequest: r}
			if len(r.last) > 0 && bytes.Equal(r.last, lastTaken) {
				s.upTo = taken
			}
			stops = append(stops, s)
			settle()
		case <-drain:
			drain, draining = nil, true
		case <-f.acks.notice(): // acks came: a batch held back for them may go
		case <-ctxDone:
			ctxDone, halt = nil, true
		case <-wake:
		}
		now = time.Now() // once per wake-up
	}
}

// reason says why the batch the loop takes now goes, draining or not.
func (f *flow) reason(draining bool) string {
	b, p := f.batch, f.policy
	switch {
	case p.Count > 0 && b.Len() >= p.Count:
		return metrics.FlushSize
	case p.Bytes > 0 && b.Bytes() >= p.Bytes:
		return metrics.FlushBytes
	case !b.Room():
		return metrics.FlushHold
	case draining:
		return metrics.FlushStop
	case p.Delay > 0: // due, and not complete: its oldest record waited the delay
		return metrics.FlushDelay
	}
	return metrics.FlushGroupCommit
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
