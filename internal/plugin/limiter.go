package plugin

import "time"

// limiter is how many Writes a destination may have in flight together. A
// fixed one is its Concurrency's Max. An adaptive one looks for the knee:
// the most Writes that still bring more records per second, past which
// more only wait longer. It starts at one Write and, window by window,
// measures the Writes' records per second and the time each took, per
// Write and per record:
//
//   - a window whose Writes slowed, a Write and a record each taking
//     three times the least of the recent windows (a baseline, as
//     Netflix's Gradient2 keeps of its round trips: a sink that collapsed
//     past a number of connections, a listen backlog overflowing and its
//     clients waiting a second to try again), comes down at once to the
//     limit whose records a second were best below it, the last that
//     paid, whether the Writes filled the limit or not: once a sink
//     collapses, fewer are in flight than the limit allows. It remembers
//     the limit it came down from as a cliff, which it tries again only
//     after cliffWindows windows, twice as many after each fall there.
//     Larger batches take longer a Write but not a record, smaller ones
//     longer a record but not a Write: neither is a slowed sink;
//   - in a window where the limit bound (by Little's law, the Writes in
//     flight averaged at least limit − ½: their durations over the
//     window's length), against the rate of one Write fewer: a step that
//     paid (the last Write added at least a quarter of what an average
//     one brings, and most batches were complete, so that batches grow
//     before Writes multiply) adds one more; a step that did not pay
//     (more records in flight, no more records a second: they only
//     queued) goes back one, and stays there for a few windows before it
//     tries again; a rate that fell (the sink slowed under the load)
//     comes down at once to the Writes the sink served, by Little's law
//     the limit times the baseline time per record over the window's;
//   - a Write refused with a retryable error (the sink pushing back)
//     takes a tenth off at once, and the limit holds for a few windows.
//
// It is a pure policy: the owner loop tells it what happened, and asks it.
type limiter struct {
	max      int
	adaptive bool
	limit    int

	// The window: when it began, and its Writes, their records and
	// durations.
	began      time.Time
	writes     int
	records    int
	took       time.Duration
	complete   int  // Writes whose batch was complete: it reached the batch size or bytes, or the hold bound
	pushedBack bool // a Write met a retryable error in the window

	calm   int        // windows to go before the limit grows again
	rates  []float64  // by limit, the records a second of its last window that bound, 0 when none
	recent []baseline // the last baselineWindows windows' times

	cliff      int // a limit at which the Writes slowed; 0: none
	cliffCalm  int // windows to go before the limit may reach the cliff again
	cliffAfter int // windows the next fall at the cliff keeps it away
}

// baseline is the time a window's Writes took, per Write and per record,
// in seconds.
type baseline struct{ perWrite, perRecord float64 }

const (
	// windowWrites is how many Writes, for each one of the limit, make a
	// window, which also lasts at least windowTime: a limit one too high
	// is tried for that long.
	windowWrites = 8
	windowTime   = 50 * time.Millisecond
	// stepShare is the share of an average Write's records a second that
	// the last Write added must bring for the step to have paid.
	stepShare = 0.25
	// fallen is how far the rate may fall below that of one Write fewer
	// before the limit comes down to the Writes the sink served.
	fallen = 0.9
	// baselineWindows is how many windows the baseline is the least of.
	baselineWindows = 16
	// calmWindows is how many windows the limit holds after a step that
	// did not pay or a push-back before it grows again: each try past
	// the knee costs waiting, or a refusal and its retry.
	calmWindows = 3
	// slowed is how many times the baseline a window's Writes take, per
	// Write and per record, for the sink to have slowed.
	slowed = 3
	// cliffWindows is how many windows the limit stays below a cliff
	// after its first fall there: a try at the cliff costs a slowed
	// window.
	cliffWindows = 50
)

func newLimiter(c Concurrency) *limiter {
	l := &limiter{max: max(c.Max, 1), adaptive: c.Adaptive}
	l.limit = l.max
	if l.adaptive {
		l.limit = 1
		l.rates = make([]float64, l.max+1)
	}
	return l
}

// current returns how many Writes may be in flight together now.
func (l *limiter) current() int { return l.limit }

// pushed notes a Write's retryable error, at once: a Write that is
// refused stays in flight while it waits to be tried again.
func (l *limiter) pushed() {
	if l.adaptive && !l.pushedBack { // once a window: a burst of refusals is one push
		l.pushedBack, l.calm = true, calmWindows
		l.limit = max(1, min(l.limit-1, l.limit*9/10))
	}
}

// ended notes a Write of records that took took and ended at now, and
// whether its batch was complete, unless it was pushed back, which says
// nothing of the sink's pace.
func (l *limiter) ended(records int, took time.Duration, now time.Time, complete, pushedBack bool) {
	if !l.adaptive || pushedBack || records == 0 {
		return
	}
	if complete {
		l.complete++
	}
	if l.began.IsZero() {
		l.began = now.Add(-took)
	}
	l.writes++
	l.records += records
	l.took += took
	length := now.Sub(l.began)
	if l.writes < windowWrites*l.limit || length < windowTime {
		return
	}
	w := baseline{perWrite: l.took.Seconds() / float64(l.writes), perRecord: l.took.Seconds() / float64(l.records)}
	least := l.least()
	if len(l.recent) == baselineWindows {
		l.recent = l.recent[:copy(l.recent, l.recent[1:])] // the oldest goes
	}
	l.recent = append(l.recent, w)
	bound := l.took.Seconds()/length.Seconds() >= float64(l.limit)-0.5 // Little's law
	l.cliffCalm = max(0, l.cliffCalm-1)
	switch {
	case l.pushedBack:
	case least.perWrite > 0 && w.perWrite > slowed*least.perWrite && w.perRecord > slowed*least.perRecord:
		l.limit = l.fall()
	case bound:
		l.limit = l.next(float64(l.records)/length.Seconds(), w.perRecord, l.least().perRecord)
	}
	l.began, l.writes, l.records, l.took, l.complete, l.pushedBack = now, 0, 0, 0, 0, false
}

// least is the least time of the recent windows, per Write and per
// record; zero before the first.
func (l *limiter) least() baseline {
	if len(l.recent) == 0 {
		return baseline{}
	}
	b := l.recent[0]
	for _, w := range l.recent[1:] {
		b.perWrite, b.perRecord = min(b.perWrite, w.perWrite), min(b.perRecord, w.perRecord)
	}
	return b
}

// fall returns the limit after a window whose Writes slowed: the one of
// the best rate below, remembering the limit as a cliff.
func (l *limiter) fall() int {
	if l.limit == l.cliff {
		l.cliffAfter = min(2*l.cliffAfter, 16*cliffWindows)
	} else {
		l.cliff, l.cliffAfter = l.limit, cliffWindows
	}
	l.cliffCalm, l.calm = l.cliffAfter, calmWindows
	best := 1
	for k := 1; k < l.limit; k++ {
		if l.rates[k] > l.rates[best] {
			best = k
		}
	}
	return best
}

// next returns the limit after a window in which it bound, whose Writes
// brought rate records a second and took perRecord a record, against
// baseline.
func (l *limiter) next(rate, perRecord, baseline float64) int {
	fewer := l.rates[l.limit-1] // one Write fewer; rates[0] stays 0
	l.rates[l.limit] = rate
	switch {
	case fewer == 0:
	case rate < fewer*fallen:
		served := int(float64(l.limit) * baseline / perRecord)
		return max(1, min(l.limit-1, served))
	case rate < fewer*(1+stepShare/float64(l.limit-1)):
		l.calm = calmWindows
		return l.limit - 1
	}
	switch {
	case l.calm > 0:
		l.calm--
	case l.limit+1 == l.cliff && l.cliffCalm > 0:
	case 2*l.complete > l.writes:
		return min(l.max, l.limit+1)
	}
	return l.limit
}
