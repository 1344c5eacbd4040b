package plugin

import "time"

// limiter is how many Writes a destination may have in flight together. A
// fixed one is its Concurrency's Max. An adaptive one finds the limit the
// way Vector's adaptive request concurrency does, additive increase and
// multiplicative decrease on what the Writes show: it starts at one Write
// and, window by window, adds one while their mean duration holds and
// most of them started with a full batch that had waited for the limit or
// with records waiting behind it (the destination is busy, not merely
// caught now and then by a burst),
// and takes a tenth off (at least one) when it rises or the destination
// pushes back with a retryable error. A window is
// windowWrites Writes for each one of the limit, so that a limit one too
// high is tried once in that many Writes. It is a pure policy: the owner
// loop tells it what happened, and asks it.
type limiter struct {
	max      int
	adaptive bool
	limit    int

	mean, dev float64 // the Writes' durations in seconds, smoothed over windows; mean is 0 until the first window ends

	writes     int           // in the window
	took       time.Duration // their durations, summed
	waiting    bool          // a full batch waits for the limit now
	queued     int           // Writes of the window that started with a batch that had waited, or with records behind it
	pushedBack bool          // a Write met a retryable error in the window, and the limit came down
}

// windowWrites is how many Writes, for each one of the limit, make a
// window.
const windowWrites = 8

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

// waited notes a full batch that is due while the limit's Writes are in
// flight: one more would start it.
func (l *limiter) waited() { l.waiting = true }

// started notes a Write handed a batch that had waited for the limit (if
// waited was called since the last) or that more records wait behind
// (backlog).
func (l *limiter) started(backlog bool) {
	if l.waiting || backlog {
		l.queued++
	}
	l.waiting = false
}

// pushed notes a Write's retryable error, at once: a Write that is
// refused stays in flight while it waits to be tried again.
func (l *limiter) pushed() {
	if l.adaptive && !l.pushedBack { // once a window: a burst of refusals is one push
		l.pushedBack = true
		l.decrease()
	}
}

// ended notes a Write that took took, unless it was pushed back, which
// says nothing of the destination's pace.
func (l *limiter) ended(took time.Duration, pushedBack bool) {
	if !l.adaptive || pushedBack {
		return
	}
	l.writes++
	l.took += took
	if l.writes < windowWrites*l.limit {
		return
	}
	mean := l.took.Seconds() / float64(l.writes)
	switch {
	case l.pushedBack:
	case l.mean > 0 && mean > l.mean+max(2.5*l.dev, l.mean/4):
		l.decrease()
	case 2*l.queued > l.writes:
		l.limit = min(l.max, l.limit+1)
	}
	if l.mean == 0 {
		l.mean = mean
	} else {
		const alpha = 0.4
		l.dev += alpha * (abs(mean-l.mean) - l.dev)
		l.mean += alpha * (mean - l.mean)
	}
	l.writes, l.took, l.queued, l.pushedBack = 0, 0, 0, false
}

func (l *limiter) decrease() { l.limit = max(1, min(l.limit-1, l.limit*9/10)) }

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
