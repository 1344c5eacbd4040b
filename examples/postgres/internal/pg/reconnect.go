package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5/pgconn"
)

// ReconnectSettings are the reconnect.* parameters of either role.
type ReconnectSettings struct {
	Timeout time.Duration `param:"timeout" default:"5m" validate:"gt=-1" desc:"How long the connector keeps reconnecting when the database goes away (a restart, a crash, a network failure), and Open waits for a database that is starting: attempts follow each other after waits of 100ms doubling up to 2s, and the connector fails only once the database has been unreachable this long, naming the last reason. A source streaming changes resumes after the last change it handed out; a source reading its snapshot fails at once, and resumes it when Conduit restarts it. 0 fails at once."`
}

// ReconnectParam names the parameter in errors.
const ReconnectParam = "reconnect.timeout"

// Waits between attempts to reconnect: the first up to reconnectDelay, each
// later one up to twice the one before, at most reconnectMaxDelay, each
// drawn from the upper half of its range, so that connectors that lost the
// same server do not come back all at once.
const (
	reconnectDelay    = 100 * time.Millisecond
	reconnectMaxDelay = 2 * time.Second
)

// Backoff is the waits between attempts to reconnect.
type Backoff struct{ ceiling time.Duration }

// Next returns the wait before the next attempt.
func (b *Backoff) Next() time.Duration {
	if b.ceiling == 0 {
		b.ceiling = reconnectDelay
	}
	d := b.ceiling
	b.ceiling = min(2*b.ceiling, reconnectMaxDelay)
	return d/2 + rand.N(d-d/2+1)
}

// Sleep waits for the next attempt, but not past deadline; it returns
// false, at once, if the deadline has passed or ctx ends first.
func (b *Backoff) Sleep(ctx context.Context, deadline time.Time) bool {
	left := time.Until(deadline)
	if left <= 0 {
		return false
	}
	t := time.NewTimer(min(b.Next(), left))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// ConnectionLost reports whether err says that the connection to the
// database broke or could not be made while the server is away: a
// network error (refused, reset, EOF), a server shutting down, crashed or
// starting up (SQLSTATE 57P01, 57P02, 57P03), a connection failure (class
// 08). Errors whose cause was flattened to text (to remove the password)
// are told by their text.
func ConnectionLost(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return lostCode(pgErr.Code)
	}
	var connErr *pgconn.ConnectError
	var netErr *net.OpError
	if errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, "[SQLSTATE "); i >= 0 && len(msg) >= i+15 {
		return lostCode(msg[i+10 : i+15])
	}
	for _, s := range []string{"unexpected EOF", "connection refused", "connection reset", "broken pipe", "conn closed", "failed to connect", "no connection to the server", "use of closed network connection", "the database system is"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// lostCode reports whether SQLSTATE code says the session is gone for a
// reason of the server's, not of the request's.
func lostCode(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03", "57P05":
		return true
	}
	return strings.HasPrefix(code, "08")
}

// Outage follows a lost connection, from the first failure that met it to
// the first success after, for Writes that may meet it together: each
// loss and each recovery is logged once.
type Outage struct {
	mu     sync.Mutex
	since  time.Time // when the connection was found lost; zero: it is not
	reason string    // the last failure's
}

// Lost notes a failure that met a lost connection and returns the
// deadline of the outage, when it began before and whether it is new.
func (o *Outage) Lost(reason string, timeout time.Duration) (deadline time.Time, began bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reason = reason
	if o.since.IsZero() {
		o.since, began = time.Now(), true
	}
	return o.since.Add(timeout), began
}

// Restored ends the outage and returns how long it lasted; zero if there
// was none.
func (o *Outage) Restored() time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.since.IsZero() {
		return 0
	}
	took := time.Since(o.since)
	o.since = time.Time{}
	return took
}

// LastReason is the reason of the outage's last failure.
func (o *Outage) LastReason() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.reason
}

// GaveUp is the error of a connector that could not reconnect within
// reconnect.timeout. It does not wrap the last failure, so that the SDK
// does not take it for a failure worth retrying.
func GaveUp(timeout time.Duration, reason string) error {
	return fmt.Errorf("no connection to PostgreSQL for %s (parameter %q): %s", timeout, ReconnectParam, reason)
}

// WaitForServer calls connect until it succeeds, fails for a reason other
// than a lost connection, or timeout passes (a database that is starting,
// or restarting, refuses connections for a while); timeout 0 calls it
// once. what says what is connecting, for the log.
func WaitForServer(ctx context.Context, timeout time.Duration, url, what string, connect func() error) error {
	err := connect()
	if err == nil || timeout <= 0 || !ConnectionLost(err) {
		return err
	}
	began := time.Now()
	sdk.Logger(ctx).Warn(fmt.Sprintf("postgres: %s: cannot connect to PostgreSQL: %s; retrying for up to %s (parameter %q)", what, Reason(err, url), timeout, ReconnectParam))
	var b Backoff
	for {
		if !b.Sleep(ctx, began.Add(timeout)) {
			if ctx.Err() != nil {
				return err
			}
			return GaveUp(timeout, Reason(err, url))
		}
		if err = connect(); err == nil {
			sdk.Logger(ctx).Info(fmt.Sprintf("postgres: %s: connected to PostgreSQL after %s", what, time.Since(began).Round(time.Millisecond)))
			return nil
		}
		if !ConnectionLost(err) {
			return err
		}
	}
}
