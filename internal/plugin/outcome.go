package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/metrics"
)

// outcomes writes a batch of records to a destination with as many Writes
// as their outcomes take, and settles every record exactly once, in order:
//
//   - records[:n] are acked;
//   - a record fault at n nacks records[n] alone, with its own error, and
//     records[n+1:] go to the next Write;
//   - a retryable error at n writes records[n:] again after a backoff (see
//     [Retry]) and nacks them, saying so, only when the retries
//     run out, the destination is stopped or torn down, or ctx ends;
//   - any other error nacks records[n] with it and each later record with
//     an error that says it was not attempted because records[n] failed;
//   - a Write that breaks its contract, or panics, is settled by [settle]:
//     every record it did not confirm is nacked with the same error, as
//     nothing says which record is at fault.
type outcomes struct {
	write    func(ctx context.Context, records []opencdc.Record) (int, error)
	retry    Retry
	classify func(error) Fault // nil: every error is unclassified
	halt     *retryHalt        // nil: retries end only with ctx
	log      *slog.Logger
	metrics  *metrics.Set // counts the Writes, acks, nacks and retries; nil: nothing
	// send delivers settled acks to Conduit, in order; writeAll calls it
	// before each backoff and once at the end, unless hold is set.
	send func([]pconnector.DestinationRunResponseAck) error
	// hold, if set, takes the acks settled last instead of send, for a
	// later send to deliver before its own.
	hold func([]pconnector.DestinationRunResponseAck)
}

// writeAll writes records and settles them; its error is send's.
func (o outcomes) writeAll(ctx context.Context, records []opencdc.Record) error {
	// The positions are taken before Write, which may not change them but
	// could.
	positions := positionsOf(records)
	var settled []pconnector.DestinationRunResponseAck
	ack := func(from, to int) {
		for _, p := range positions[from:to] {
			settled = append(settled, pconnector.DestinationRunResponseAck{Position: p})
		}
		o.metrics.Acked(to - from)
	}
	nack := func(from, to int, kind, msg string) {
		for _, p := range positions[from:to] {
			settled = append(settled, pconnector.DestinationRunResponseAck{Position: p, Error: msg})
		}
		o.metrics.Nacked(kind, to-from)
	}
	flush := func() error {
		if len(settled) == 0 {
			return nil
		}
		acks := settled
		settled = nil
		return o.send(acks)
	}
	var (
		start       int  // records[:start] are settled
		retries     int  // retries since the last progress
		stopRetried bool // a retry was made after Stop, without progress since
	)
	for start < len(records) {
		batch := records[start:]
		var n int
		var began time.Time
		if o.metrics != nil {
			began = time.Now()
		}
		err := guard("Write", func() (err error) {
			n, err = o.write(ctx, batch)
			return err
		})
		if o.metrics != nil {
			o.metrics.Called(time.Since(began))
		}
		var panicked *PanicError
		if n < 0 || n > len(batch) || n == len(batch) || err == nil || errors.As(err, &panicked) {
			acks, acked, nackErr := settle(positions[start:], n, err)
			switch {
			case nackErr != nil:
				o.log.Error("records not written", "position", string(positions[start+acked]), "count", len(acks)-acked, "error", nackErr)
			case err != nil:
				o.log.Warn("Write wrote every record but returned an error", "error", err)
			}
			settled = append(settled, acks...)
			o.metrics.Acked(acked)
			o.metrics.Nacked(metrics.NackContractBroken, len(acks)-acked)
			start = len(records)
			continue
		}
		failed := start + n
		ack(start, failed)
		if n > 0 {
			retries, stopRetried = 0, false
		}
		text := errorText(err)
		switch o.faultOf(err) {
		case RecordFault:
			o.log.Error("record not written", "position", string(positions[failed]), "error", err)
			nack(failed, failed+1, metrics.NackRecordFault, fmt.Sprintf("record at position %q: %s", positions[failed], ownReason(positions[failed], text)))
			start = failed + 1
			retries, stopRetried = 0, false
			if start < len(records) && (ctx.Err() != nil || o.halt.isAborted()) {
				msg := "not attempted: the destination is tearing down"
				o.log.Error("records not written", "position", string(positions[start]), "count", len(records)-start, "error", msg)
				nack(start, len(records), metrics.NackNotAttempted, msg)
				start = len(records)
			}
		case Retryable:
			start = failed
			if err := flush(); err != nil {
				return err
			}
			why := o.pause(ctx, retries, &stopRetried, positions[failed], err)
			if why == "" {
				retries++
				o.metrics.Retried()
				continue
			}
			msg := fmt.Sprintf("not written: %s: %s", why, text)
			o.log.Error("records not written", "position", string(positions[failed]), "count", len(records)-failed, "error", msg)
			nack(failed, len(records), metrics.NackRetriesExhausted, msg)
			start = len(records)
		default:
			o.log.Error("records not written", "position", string(positions[failed]), "count", len(records)-failed, "error", err)
			reason := ownReason(positions[failed], text)
			nack(failed, failed+1, metrics.NackFailed, fmt.Sprintf("record at position %q: %s", positions[failed], reason))
			nack(failed+1, len(records), metrics.NackNotAttempted, fmt.Sprintf("not attempted: the record at position %q failed: %s", positions[failed], reason))
			start = len(records)
		}
	}
	if o.hold != nil {
		o.hold(settled)
		return nil
	}
	return flush()
}

// pause waits before retry number retries after err and returns "", or
// returns why there is no retry. After Stop, it retries once at once
// (stopRetried records that it did) and then gives up.
func (o outcomes) pause(ctx context.Context, retries int, stopRetried *bool, pos opencdc.Position, err error) string {
	switch {
	case ctx.Err() != nil:
		return fmt.Sprintf("retrying ended after %d retries (%v)", retries, ctx.Err())
	case o.halt.isAborted():
		return fmt.Sprintf("retrying ended after %d retries as the destination is torn down", retries)
	case o.retry.Attempts == 0:
		return "the destination failed and retries are off (sdk.retry.attempts is 0)"
	case retries >= o.retry.Attempts:
		return fmt.Sprintf("the destination still failed after %d retries", retries)
	case o.halt.isStopping() && *stopRetried:
		return fmt.Sprintf("retrying ended after %d retries as the destination was stopped", retries)
	case o.halt.isStopping():
		*stopRetried = true
		o.log.Warn("Write failed; retrying once more at once, as the destination is stopping", "position", string(pos), "error", err)
		return ""
	}
	wait := jitter(o.retry.Backoff(retries))
	o.log.Warn("Write failed; retrying", "position", string(pos), "retry", retries+1, "of", o.retry.Attempts, "in", wait, "error", err)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return ""
	case <-o.halt.stopping():
		*stopRetried = true
		return ""
	case <-o.halt.aborted():
		return fmt.Sprintf("retrying ended after %d retries as the destination is torn down", retries)
	case <-ctx.Done():
		return fmt.Sprintf("retrying ended after %d retries (%v)", retries, ctx.Err())
	}
}

// ownReason is text, the error of the record at pos, without the
// "record at position <pos>: " it may begin with: the nack says that once,
// also when the connector's error already does (Conduit puts the nack's
// error in the record's dead-letter queue entry, which users read).
func ownReason(pos opencdc.Position, text string) string {
	return strings.TrimPrefix(text, fmt.Sprintf("record at position %q: ", pos))
}

// errorText returns err's message, which a nack must never leave empty: an
// empty error string reads as a positive ack to Conduit.
func errorText(err error) string {
	if msg := err.Error(); msg != "" {
		return msg
	}
	return fmt.Sprintf("destination returned an error with an empty message (%T)", err)
}

// faultOf classifies err with the destination's classifier.
func (o outcomes) faultOf(err error) Fault {
	if o.classify == nil {
		return Unclassified
	}
	return o.classify(err)
}
