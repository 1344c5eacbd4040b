package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
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
	shutdown *shutdown         // nil: retries end only with ctx
	log      *slog.Logger
	metrics  *metrics.Set // counts the Writes, acks, nacks and retries; nil: nothing
	// pushedBack, if set, is called when a Write fails with a retryable
	// error, before the wait to retry it, with the acks settled since the
	// last call: they need not wait for the retry.
	pushedBack func(settled []ack)
}

// writeAll writes records and settles every one of them, in order, and
// returns the acks settled since the last pushedBack.
func (o outcomes) writeAll(ctx context.Context, records []opencdc.Record) []ack {
	if len(records) == 0 {
		return nil
	}
	return o.goOn(ctx, records, o.first(ctx, records))
}

// attempt is the first Write of a batch: its records' positions, taken
// before it, and what it returned.
type attempt struct {
	positions []opencdc.Position
	n         int
	err       error
}

// first makes the first Write of records, which are not empty.
func (o outcomes) first(ctx context.Context, records []opencdc.Record) attempt {
	// The positions are taken before Write, which may not change them but
	// could.
	a := attempt{positions: positionsOf(records)}
	a.n, a.err = o.call(ctx, records)
	return a
}

// wroteAll reports whether the Write wrote every record and returned no
// error: each is acked, and nothing more is to be done.
func (a attempt) wroteAll() bool { return a.err == nil && a.n == len(a.positions) }

// acks are the acks of records whose first Write, a, wrote them all.
func (o outcomes) acks(a attempt) []ack {
	s := settlement{positions: a.positions, log: o.log, metrics: o.metrics}
	s.ack(len(a.positions))
	return s.take()
}

// goOn settles records as the outcome of their first Write, a, says, and
// writes again those it did not write, as writeAll does.
func (o outcomes) goOn(ctx context.Context, records []opencdc.Record, a attempt) []ack {
	s := settlement{positions: a.positions, log: o.log, metrics: o.metrics}
	var r retrying
	made := &a // the Write made and not yet settled
	for s.next < len(records) {
		from := s.next
		var n int
		var err error
		if made != nil {
			n, err, made = made.n, made.err, nil
		} else {
			n, err = o.call(ctx, records[from:])
		}
		if contractKept(n, len(records)-from, err) {
			s.ack(from + n)
			if n > 0 {
				r = retrying{}
			}
			if !o.settleFailure(ctx, &s, &r, err) {
				continue
			}
			if o.pushedBack != nil {
				o.pushedBack(s.take())
			}
			if why := o.pause(ctx, &r, s.positions[s.next], err); why != "" {
				s.nackRest(metrics.NackRetriesExhausted, fmt.Sprintf("not written: %s: %s", why, errorText(err)))
				continue
			}
			o.metrics.Retried()
			continue
		}
		// Every record the Write did not confirm is nacked with the same
		// error, as nothing says which record is at fault.
		acked, nackErr := judge(len(records)-from, n, err)
		s.ack(from + acked)
		if nackErr != nil {
			s.nackRest(metrics.NackContractBroken, errorText(nackErr))
		} else if err != nil {
			o.log.Warn("Write wrote every record but returned an error", "error", err)
		}
	}
	return s.take()
}

// call makes one Write, guarded, and measures it.
func (o outcomes) call(ctx context.Context, batch []opencdc.Record) (n int, err error) {
	var began time.Time
	if o.metrics != nil {
		began = time.Now()
	}
	err = guard("Write", func() (err error) {
		n, err = o.write(ctx, batch)
		return err
	})
	if o.metrics != nil {
		o.metrics.Called(time.Since(began))
	}
	return n, err
}

// contractKept reports whether a Write of size records that returned n and
// err kept its contract and failed, so that err's classification decides
// what happens to the records from n on. A Write that broke the contract,
// panicked, or wrote everything is settled by what [judge] says.
func contractKept(n, size int, err error) bool {
	var panicked *PanicError
	return n >= 0 && n < size && err != nil && !errors.As(err, &panicked)
}

// settleFailure settles the record at s.next, which the Write failed on
// with err, as err's classification says, and reports whether the records
// from it on are to be written again after a backoff: a retryable error
// settles nothing here; a record fault nacks that record alone and goes
// on with the next (unless the destination is going away); any other
// error nacks it and the rest.
func (o outcomes) settleFailure(ctx context.Context, s *settlement, r *retrying, err error) (retry bool) {
	failed := s.positions[s.next]
	reason := ownReason(failed, errorText(err))
	switch o.faultOf(err) {
	case Retryable:
		return true
	case RecordFault:
		s.nack(s.next+1, metrics.NackRecordFault, fmt.Sprintf("record at position %q: %s", failed, reason))
		*r = retrying{}
		if ctx.Err() != nil || o.shutdown.isAborted() {
			s.nackRest(metrics.NackNotAttempted, "not attempted: the destination is tearing down")
		}
	default:
		s.nack(s.next+1, metrics.NackFailed, fmt.Sprintf("record at position %q: %s", failed, reason))
		s.nackRest(metrics.NackNotAttempted, fmt.Sprintf("not attempted: the record at position %q failed: %s", failed, reason))
	}
	return false
}

// settlement is one ack for each record of a batch, settled in order and
// not yet sent; the batch's records before next are settled.
type settlement struct {
	positions []opencdc.Position
	next      int
	settled   []ack
	log       *slog.Logger
	metrics   *metrics.Set
}

// ack acks the records from next up to to.
func (s *settlement) ack(to int) {
	for _, p := range s.positions[s.next:to] {
		s.settled = append(s.settled, ack{Position: p})
	}
	s.metrics.Acked(to - s.next)
	s.next = to
}

// nack nacks the records from next up to to with msg, counting them as
// kind, and logs them.
func (s *settlement) nack(to int, kind, msg string) {
	if to == s.next {
		return
	}
	if msg == "" { // an empty error would read as a positive ack
		msg = "not written"
	}
	if n := to - s.next; n == 1 {
		s.log.Error("record not written", "position", string(s.positions[s.next]), "error", msg)
	} else {
		s.log.Error("records not written", "position", string(s.positions[s.next]), "count", n, "error", msg)
	}
	for _, p := range s.positions[s.next:to] {
		s.settled = append(s.settled, ack{Position: p, Error: msg})
	}
	s.metrics.Nacked(kind, to-s.next)
	s.next = to
}

// nackRest nacks every record from next on.
func (s *settlement) nackRest(kind, msg string) { s.nack(len(s.positions), kind, msg) }

// take returns the acks settled since the last take.
func (s *settlement) take() []ack {
	acks := s.settled
	s.settled = nil
	return acks
}

// retrying is what the retries of a Write's failing records have done
// since the last progress.
type retrying struct {
	count       int  // retries made
	stopRetried bool // one was made after Stop
}

// pause waits before the next retry after err, which the record at pos
// failed with, counts it in r and returns "", or returns why there is no
// retry. After Stop, it retries once at once and then gives up.
func (o outcomes) pause(ctx context.Context, r *retrying, pos opencdc.Position, err error) string {
	why := o.wait(ctx, r.count, &r.stopRetried, pos, err)
	if why == "" {
		r.count++
	}
	return why
}

// wait waits before retry number retries after err and returns "", or
// returns why there is no retry (see pause); stopRetried records that a
// retry was made after Stop.
func (o outcomes) wait(ctx context.Context, retries int, stopRetried *bool, pos opencdc.Position, err error) string {
	switch {
	case ctx.Err() != nil:
		return fmt.Sprintf("retrying ended after %d retries (%v)", retries, ctx.Err())
	case o.shutdown.isAborted():
		return fmt.Sprintf("retrying ended after %d retries as the destination is torn down", retries)
	case o.retry.Attempts == 0:
		return "the destination failed and retries are off (sdk.retry.attempts is 0)"
	case retries >= o.retry.Attempts:
		return fmt.Sprintf("the destination still failed after %d retries", retries)
	case o.shutdown.isStopping() && *stopRetried:
		return fmt.Sprintf("retrying ended after %d retries as the destination was stopped", retries)
	case o.shutdown.isStopping():
		*stopRetried = true
		o.log.Warn("Write failed; retrying once more at once, as the destination is stopping", "position", string(pos), "error", err)
		return ""
	}
	wait := max(jitter(o.retry.Backoff(retries)), retryAfter(err))
	o.log.Warn("Write failed; retrying", "position", string(pos), "retry", retries+1, "of", o.retry.Attempts, "in", wait, "error", err)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return ""
	case <-o.shutdown.stopping():
		*stopRetried = true
		return ""
	case <-o.shutdown.aborted():
		return fmt.Sprintf("retrying ended after %d retries as the destination is torn down", retries)
	case <-ctx.Done():
		return fmt.Sprintf("retrying ended after %d retries (%v)", retries, ctx.Err())
	}
}

// retryAfter returns the least wait before a retry that err asks for
// (sdk.RetryableAfter), or 0.
func retryAfter(err error) time.Duration {
	var after interface{ RetryAfter() time.Duration }
	if errors.As(err, &after) {
		return after.RetryAfter()
	}
	return 0
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
