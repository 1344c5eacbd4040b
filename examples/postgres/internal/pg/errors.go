package pg

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Retryable reports whether err is a failure of the system, which asking
// again later may not meet: the connection broke or could not be made
// (other than for a refused login), the server is shutting down or
// starting (57P01, 57P02, 57P03) or ended an idle session (57P05), a
// serialization failure (40001), a deadlock (40P01), a lock or statement
// timeout (55P03, 57014), exhausted resources (class 53: disk full, out
// of memory, too many connections) or an I/O error (58000, 58030). A
// database that was dropped (57P04) is not coming back, and is not
// retried.
func Retryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "53") {
			return true
		}
		switch pgErr.Code {
		case "40001", "40P01", "55P03", "57014", "57P01", "57P02", "57P03", "57P05", "58000", "58030":
			return true
		}
		return false
	}
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err) || errors.Is(err, pgx.ErrTxClosed) || isNetworkError(err)
}

// MayHaveCommitted reports whether a statement that failed with err, a
// failure of the system, may nonetheless have committed: the connection
// broke after it was sent, before the server said how it went. An error
// the server reported ended its transaction; a statement that was never
// sent, or a connection never made, did nothing.
func MayHaveCommitted(err error) bool {
	var pgErr *pgconn.PgError
	var connErr *pgconn.ConnectError
	return !errors.As(err, &pgErr) && !errors.As(err, &connErr) && !pgconn.SafeToRetry(err)
}

func isNetworkError(err error) bool {
	msg := err.Error()
	for _, s := range []string{"connection reset", "broken pipe", "unexpected EOF", "connection refused", "conn closed", "closed pool", "failed to connect", "use of closed network connection"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Message is the database's reason for err, with its detail.
func Message(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		msg := pgErr.Message
		if pgErr.Detail != "" {
			msg += " (" + pgErr.Detail + ")"
		}
		return msg + " [SQLSTATE " + pgErr.Code + "]"
	}
	return err.Error()
}

// Reason is err's text on one line, the password of url removed: the
// server's Reason when it gave one, and when it refused a connection,
// that Reason first: pgx
// lists every attempt in order (with sslmode=prefer, the refused TLS
// attempt comes first), which buries why the server said no.
func Reason(err error, url string) string {
	var connErr *pgconn.ConnectError
	var pgErr *pgconn.PgError
	var msg string
	switch {
	case errors.As(err, &connErr) && errors.As(err, &pgErr):
		c := connErr.Config
		msg = fmt.Sprintf("%s (connecting to %s:%d as user %s, database %s)", Message(pgErr), c.Host, c.Port, c.User, c.Database)
	case errors.As(err, &pgErr):
		msg = Message(pgErr)
	default:
		msg = strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
	}
	return RedactText(msg, url)
}

// Redact removes the password of url from err's message.
func Redact(err error, url string) string { return RedactText(err.Error(), url) }

// RedactText removes the password of url from msg.
func RedactText(msg, url string) string {
	if cfg, perr := pgconn.ParseConfig(url); perr == nil && cfg.Password != "" {
		msg = strings.ReplaceAll(msg, cfg.Password, "xxxxx")
	}
	return msg
}
