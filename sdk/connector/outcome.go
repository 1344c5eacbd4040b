package connector

import (
	"errors"
	"time"
)

// RecordFault marks err, returned by Write with n, as the fault of
// records[n] itself: bad data, a constraint it violates, anything that
// writing it again would not fix. The SDK acknowledges records[:n],
// negatively acknowledges records[n] alone with err (naming its position),
// and passes records[n+1:] to a following Write. RecordFault(nil) is nil.
func RecordFault(err error) error {
	if err == nil {
		return nil
	}
	return &recordFault{err}
}

// Retryable marks err, returned by Write with n, as the system's failure,
// not the records': a dropped connection, a timeout, a deadlock, a
// failover. The SDK acknowledges records[:n] and calls Write again with
// records[n:] after a jittered, growing delay (the sdk.retry.* parameters),
// and negatively acknowledges them with err, saying that retries ran out,
// only when the last attempt fails too or the destination is stopped.
// Retryable(nil) is nil.
//
// If an error is marked both ways, it is a record fault: retrying a record
// that cannot be written would hold up, then nack, the records after it.
func Retryable(err error) error {
	if err == nil {
		return nil
	}
	return &retryable{err: err}
}

// RetryableAfter is [Retryable] for a system that says when to try again
// (an HTTP 429 or 503 with Retry-After): the next attempt waits at least
// after, or as the sdk.retry.* parameters say if that is longer.
// RetryableAfter(nil, d) is nil.
func RetryableAfter(err error, after time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryable{err: err, after: after}
}

// IsRecordFault reports whether err, or an error it wraps, was marked by
// [RecordFault].
func IsRecordFault(err error) bool {
	var f *recordFault
	return errors.As(err, &f)
}

// IsRetryable reports whether err, or an error it wraps, was marked by
// [Retryable] and not by [RecordFault].
func IsRetryable(err error) bool {
	var r *retryable
	return !IsRecordFault(err) && errors.As(err, &r)
}

// recordFault and retryable keep the text of the error they mark, so that a
// nack says what the connector said.
type (
	recordFault struct{ err error }
	retryable   struct {
		err   error
		after time.Duration // the least wait before the next attempt
	}
)

func (e *recordFault) Error() string { return e.err.Error() }
func (e *recordFault) Unwrap() error { return e.err }

func (e *retryable) Error() string { return e.err.Error() }
func (e *retryable) Unwrap() error { return e.err }

// RetryAfter is the least wait before the next attempt, which the plugin
// server asks of a retryable error.
func (e *retryable) RetryAfter() time.Duration { return e.after }
