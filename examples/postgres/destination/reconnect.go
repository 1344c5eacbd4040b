package destination

import (
	"context"
	"fmt"
	"time"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
)

// writeReconnecting writes records as [Destination.write] and
// [Destination.writeOnce] do and, when it meets a lost connection, waits and writes the rest
// again, up to reconnect.timeout after the connection was found lost,
// rather than let the SDK's retries (a few, for about 20 s) fail the
// pipeline over a database restart. The pool's connections are dropped
// once per outage: pgxpool opens new ones as Writes need them. Once the
// timeout has passed, the error names the parameter and the last reason,
// and is not retryable. Other retryable failures (a deadlock, too many
// connections) are left to the SDK, whose adaptive concurrency learns
// from them.
func (d *Destination) writeReconnecting(ctx context.Context, records []sdk.Record) (int, error) {
	timeout := d.cfg.Reconnect.Timeout
	var b pg.Backoff
	done := 0
	for {
		n, err := d.writeAttempt(ctx, records[done:])
		done += n
		if err == nil || n > 0 {
			d.reconnected(ctx)
		}
		if err == nil || timeout <= 0 || !sdk.IsRetryable(err) || !pg.ConnectionLost(err) || ctx.Err() != nil {
			return done, err
		}
		deadline, began := d.outage.Lost(err.Error(), timeout)
		if began {
			sdk.Logger(ctx).Warn(fmt.Sprintf("postgres: lost the connection to PostgreSQL: %s; reconnecting for up to %s (parameter %q)", err, timeout, pg.ReconnectParam))
			d.pool.Reset()
		}
		if !b.Sleep(ctx, deadline) {
			if ctx.Err() != nil {
				return done, err
			}
			return done, pg.GaveUp(timeout, d.outage.LastReason())
		}
	}
}

// reconnected logs the end of an outage, if one was going on.
func (d *Destination) reconnected(ctx context.Context) {
	if took := d.outage.Restored(); took > 0 {
		sdk.Logger(ctx).Info(fmt.Sprintf("postgres: reconnected to PostgreSQL after %s", took.Round(time.Millisecond)))
	}
}

// writeAttempt is one attempt at writing records, in the mode configured.
func (d *Destination) writeAttempt(ctx context.Context, records []sdk.Record) (int, error) {
	if d.written != nil {
		return d.writeOnce(ctx, records)
	}
	return d.write(ctx, records)
}
