package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/matryer/is"
)

func TestBackoff(t *testing.T) {
	is := is.New(t)
	var b Backoff
	for _, ceiling := range []time.Duration{100, 200, 400, 800, 1600, 2000, 2000} {
		ceiling *= time.Millisecond
		d := b.Next()
		is.True(d >= ceiling/2 && d <= ceiling) // each wait from the upper half of its range
	}
	start := time.Now()
	is.True(!b.Sleep(t.Context(), start)) // a deadline passed: no wait
	is.True(b.Sleep(t.Context(), start.Add(50*time.Millisecond)))
	is.True(time.Since(start) < time.Second) // cut short at the deadline
}

func TestConnectionLost(t *testing.T) {
	for _, c := range []struct {
		err  error
		lost bool
	}{
		{io.ErrUnexpectedEOF, true},
		{fmt.Errorf("write failed: %w", net.ErrClosed), true}, // the pool closed a connection the server had ended
		{errors.New("read tcp 127.0.0.1:1->127.0.0.1:2: use of closed network connection"), true},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{fmt.Errorf("receive message failed: %w", io.ErrUnexpectedEOF), true},
		{errors.New("receive changes: receive message failed: unexpected EOF"), true},
		{&pgconn.PgError{Code: "57P01"}, true},
		{&pgconn.PgError{Code: "57P02"}, true},
		{&pgconn.PgError{Code: "57P03"}, true},
		{&pgconn.PgError{Code: "08006"}, true},
		{errors.New(`failed to connect to host=127.0.0.1: dial error: connection refused`), true},
		{sdk.Retryable(errors.New(`record at position "1": table t: the database system is starting up [SQLSTATE 57P03]`)), true},
		{&pgconn.PgError{Code: "57P04"}, false}, // the database was dropped
		{&pgconn.PgError{Code: "40P01"}, false}, // a deadlock: the SDK's to retry
		{&pgconn.PgError{Code: "53300"}, false}, // too many connections: push-back
		{errors.New(`duplicate key [SQLSTATE 23505]`), false},
		{context.Canceled, false},
	} {
		if got := ConnectionLost(c.err); got != c.lost {
			t.Errorf("ConnectionLost(%v) = %v, want %v", c.err, got, c.lost)
		}
	}
}
