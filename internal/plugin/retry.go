package plugin

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Retry is the retry policy: after a retryable failure, the records not
// written are written again, up to Attempts times without progress, after
// waits that start at Delay and double up to MaxDelay, each drawn from its
// upper half. Zero Attempts means no retries.
type Retry struct {
	Attempts int
	Delay    time.Duration
	MaxDelay time.Duration
}

// Backoff returns the longest wait before retry number retry (0 for the
// first): Delay doubled retry times, at most MaxDelay.
func (r Retry) Backoff(retry int) time.Duration {
	d := r.Delay
	if d <= 0 {
		return 0
	}
	for range retry {
		if d >= r.MaxDelay/2 {
			return r.MaxDelay
		}
		d *= 2
	}
	return min(d, r.MaxDelay)
}

// jitter returns a random duration in [d/2, d]: waits spread out, so that
// connectors that failed together do not retry together, but never fall
// so short that a struggling system is hammered.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d-d/2+1)
}

// shutdown tells retries in progress that the destination is stopping
// (wait no more: one last attempt, then nack), and the writes and retries
// in progress, and the owner loop, that it is torn down (no more
// attempts, nothing more handed out). A nil *shutdown never tells.
type shutdown struct {
	stopOnce sync.Once
	stop     chan struct{}
	// tornDown is done once Abort is called: the one signal of Teardown.
	tornDown context.Context
	abort    context.CancelFunc
}

func newShutdown() *shutdown {
	tornDown, abort := context.WithCancel(context.Background())
	return &shutdown{stop: make(chan struct{}), tornDown: tornDown, abort: abort}
}

// Stop marks the destination as stopping; it is safe to call more than once.
func (h *shutdown) Stop() { h.stopOnce.Do(func() { close(h.stop) }) }

// Abort marks the destination as torn down; it is safe to call more than once.
func (h *shutdown) Abort() { h.abort() }

func (h *shutdown) stopping() <-chan struct{} {
	if h == nil {
		return nil
	}
	return h.stop
}

func (h *shutdown) aborted() <-chan struct{} {
	if h == nil {
		return nil
	}
	return h.tornDown.Done()
}

func (h *shutdown) isStopping() bool { return closed(h.stopping()) }
func (h *shutdown) isAborted() bool  { return closed(h.aborted()) }

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
