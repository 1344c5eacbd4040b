package plugin

import (
	"slices"
	"time"
)

// limiter is how many Writes a destination may have in flight together. A
// fixed one is its Concurrency's Max. An adaptive one looks for the knee,
// as TCP Vegas and Netflix's Vegas limit do: the most Writes that still
// bring more records per second, past which more only wait longer. It
// starts at one Write and, window by window, compares the time the
// window's Writes took per record with a baseline, the least of the
// recent windows' (which the windows below the knee set, so that it does
// not rise with the limit). From the two it estimates how many of the
// Writes in flight were queued at the sink, not served:
//
//	queued = limit × (1 − baseline / per record)
//
// While that is under one Write and the limit binds (the Writes in flight
// averaged at least limit − ½ over the window, by Little's law their
// durations over its length, and most batches were complete: batches grow
// before Writes multiply), it adds one; once more wait, it comes down
// to the Writes the sink served, which the baseline explains; a Write
// refused with a retryable error (the sink pushing back) takes a tenth off
// at once, and the limit holds for a few windows. A sink that gets slower
// under load (a Write now and then taking seconds) so brings it back
// towards one Write at a time.
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

	calm   int       // windows to go after a push-back before the limit grows again
	recent []float64 // the time per record of the last baselineWindows windows, in seconds
}

const (
	// windowWrites is how many Writes, for each one of the limit, make a
	// window: a limit one too high is tried for that many Writes.
	windowWrites = 8
	// baselineWindows is how many windows the baseline is the least of.
	// It is long enough that the limit, which probes one above the knee
	// and comes back, has visited the knee's lower side within it; a sink
	// that has become slower for good sets it after that many windows.
	baselineWindows = 16
	// queueAllowance is how many Writes may wait at the sink before the
	// limit comes down.
	queueAllowance = 1.0
	// calmWindows is how many windows the limit holds after a push-back
	// before it grows again: each try past what the sink takes costs a
	// refusal and its retry.
	calmWindows = 3
)

func newLimiter(c Concurrency) *limiter {
	l := &limiter{max: max(c.Max, 1), adaptive: c.Adaptive}
	l.limit = l.max
	if l.adaptive {
		l.limit = 1
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
	if l.writes < windowWrites*l.limit {
		return
	}
	perRecord := l.took.Seconds() / float64(l.records)
	if len(l.recent) == baselineWindows {
		l.recent = l.recent[:copy(l.recent, l.recent[1:])] // the oldest goes
	}
	l.recent = append(l.recent, perRecord)
	inFlight := l.took.Seconds() / now.Sub(l.began).Seconds() // Little's law
	if !l.pushedBack {
		l.limit = l.next(perRecord, slices.Min(l.recent), inFlight)
	}
	l.began, l.writes, l.records, l.took, l.complete, l.pushedBack = now, 0, 0, 0, 0, false
}

// next returns the limit after a window whose Writes took perRecord a
// record, against baseline, with inFlight of them in flight on average.
func (l *limiter) next(perRecord, baseline, inFlight float64) int {
	if perRecord <= 0 {
		return l.limit
	}
	queued := float64(l.limit) * (1 - baseline/perRecord)
	switch {
	case queued > queueAllowance:
		// Down to the Writes the sink served, which the baseline
		// explains (Little's law): the knee's lower side, which keeps
		// the baseline from drifting up; a Write that took seconds in a
		// window of tens of milliseconds cuts deep.
		served := int(float64(l.limit) * baseline / perRecord)
		return max(1, min(l.limit-1, served))
	case l.calm > 0:
		l.calm--
	case inFlight >= float64(l.limit)-0.5 && 2*l.complete > l.writes:
		return min(l.max, l.limit+1)
	}
	return l.limit
}
