package middleware

import (
	"fmt"
	"time"
)

// Retry is what the plugin server does when a destination's Write fails
// with an error marked retryable (sdk.Retryable): the records not written
// are written again, up to Attempts times, after a wait that starts at
// Delay and doubles up to MaxDelay, each wait drawn at random from its
// upper half so that connectors that failed together do not retry
// together. Records still not written after the last attempt are nacked.
// A retry that writes at least one record starts the count afresh, so a
// system that makes progress is not given up on, and the total stays
// bounded by the number of records.
//
// Like [Batching], Retry wraps nothing: the SDK hands it to the plugin
// server. Zero Attempts means no retries.
//
// The defaults in [DefaultDestination] (8 retries, 100ms, 10s) wait between
// about 11s and 23s in all: long enough to ride out a deadlock, a dropped
// connection or a failover of a few seconds, short enough that a real
// outage surfaces as a failed pipeline (which Conduit restarts with its own
// backoff) instead of a silent stall. With a dead-letter queue, retrying
// matters more: records that run out of retries go to the queue although
// nothing was wrong with them.
//
// Stop ends the current wait and makes the last attempt at once; Teardown
// ends the retries without another attempt.
type Retry struct {
	Attempts int           `param:"sdk.retry.attempts" validate:"gt=-1" desc:"How many times records are written again after a Write fails with an error the connector marks retryable (a dropped connection, a timeout), before they are nacked; 0 means never."`
	Delay    time.Duration `param:"sdk.retry.delay" validate:"gt=-1" desc:"The longest wait before the first retry; each later wait may be twice as long, up to sdk.retry.maxDelay. Each wait is drawn at random from the upper half of its range."`
	MaxDelay time.Duration `param:"sdk.retry.maxDelay" validate:"gt=-1" desc:"The longest wait between two attempts; at least sdk.retry.delay."`
}

// DefaultRetry returns the retry settings in [DefaultDestination].
func DefaultRetry() Retry {
	return Retry{Attempts: 8, Delay: 100 * time.Millisecond, MaxDelay: 10 * time.Second}
}

// Validate reports settings that do not fit together.
func (r Retry) Validate() error {
	switch {
	case r.Attempts < 0:
		return fmt.Errorf("parameter \"sdk.retry.attempts\": got \"%d\", expected 0 or more", r.Attempts)
	case r.Delay < 0:
		return fmt.Errorf("parameter \"sdk.retry.delay\": got %q, expected 0 or more", r.Delay)
	case r.MaxDelay < r.Delay:
		return fmt.Errorf("parameter \"sdk.retry.maxDelay\": got %q, expected at least the %v of \"sdk.retry.delay\"", r.MaxDelay, r.Delay)
	}
	return nil
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

// RetryPolicy returns r: it is how the SDK finds the retry settings among
// a destination's middleware, to hand them to the plugin server.
func (r Retry) RetryPolicy() Retry { return r }

// ForDestination returns nil, or an error if the settings do not fit
// together: the plugin server retries (see [Retry]).
func (r Retry) ForDestination(Env) (Middleware[Destination], error) {
	return nil, r.Validate()
}
