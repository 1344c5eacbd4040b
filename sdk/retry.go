package sdk

import (
	"fmt"
	"time"

	"github.com/connkit/connkit/internal/plugin"
	"github.com/connkit/connkit/middleware"
)

// Retry is the retry policy's settings: the sdk.retry.* parameters every
// destination has. When Write fails with an error marked [Retryable], the
// plugin server writes the records not written again, up to Attempts
// times, after a wait that starts at Delay and doubles up to MaxDelay, each
// wait drawn at random from its upper half so that connectors that failed
// together do not retry together. Records still not written after the last
// attempt are nacked. A retry that writes at least one record starts the
// count afresh, so a system that makes progress is not given up on. Zero
// Attempts means no retries.
//
// The defaults ([DefaultRetry]: 8 retries, 100ms, 10s) wait between about
// 11s and 23s in all: long enough to ride out a deadlock, a dropped
// connection or a failover, short enough that an outage surfaces as a
// failed pipeline, which Conduit restarts with its own backoff. Stop ends
// the current wait and makes one last attempt at once; Teardown ends the
// retries without another attempt.
//
// The values a [Connector] gives are the parameters' defaults, which a
// pipeline may override.
type Retry struct {
	Attempts int           `param:"sdk.retry.attempts" validate:"gt=-1" desc:"How many times records are written again after a Write fails with an error the connector marks retryable (a dropped connection, a timeout), before they are nacked; 0 means never."`
	Delay    time.Duration `param:"sdk.retry.delay" validate:"gt=-1" desc:"The longest wait before the first retry; each later wait may be twice as long, up to sdk.retry.maxDelay. Each wait is drawn at random from the upper half of its range."`
	MaxDelay time.Duration `param:"sdk.retry.maxDelay" validate:"gt=-1" desc:"The longest wait between two attempts; at least sdk.retry.delay."`
}

// DefaultRetry returns the retry defaults of a [Connector] that sets none.
func DefaultRetry() Retry {
	return Retry{Attempts: 8, Delay: 100 * time.Millisecond, MaxDelay: 10 * time.Second}
}

// Validate reports settings that do not fit together.
func (r Retry) Validate() error {
	if r.MaxDelay < r.Delay {
		return &ParameterError{Name: "sdk.retry.maxDelay", Value: r.MaxDelay.String(), Expected: fmt.Sprintf("at least the %v of \"sdk.retry.delay\"", r.Delay)}
	}
	return nil
}

// policy returns the policy the plugin server runs for r.
func (r Retry) policy(middleware.Env) (plugin.Retry, error) {
	return plugin.Retry{Attempts: r.Attempts, Delay: r.Delay, MaxDelay: r.MaxDelay}, nil
}
