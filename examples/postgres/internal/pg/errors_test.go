package pg

import (
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestRetryable(t *testing.T) {
	for _, c := range []struct {
		err       error
		retryable bool
	}{
		{&pgconn.PgError{Code: "40P01"}, true},  // a deadlock
		{&pgconn.PgError{Code: "53300"}, true},  // too many connections
		{&pgconn.PgError{Code: "57P04"}, false}, // the database was dropped
		{&pgconn.PgError{Code: "23505"}, false}, // a duplicate key: the record's
		{errors.New("write tcp 127.0.0.1:1->127.0.0.1:2: use of closed network connection"), true},
		{fmt.Errorf("receive: %w", errors.New("unexpected EOF")), true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		{errors.New("cannot cast text to int"), false},
	} {
		if got := Retryable(c.err); got != c.retryable {
			t.Errorf("Retryable(%v) = %v, want %v", c.err, got, c.retryable)
		}
	}
}
