package source

import (
	"errors"
	"fmt"
	"strings"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/jackc/pgx/v5/pgconn"
)

// sourceError is an error of the source whose text has the password
// removed and which still wraps its cause, so that a lost connection can
// be told from other failures.
type sourceError struct {
	text  string
	cause error
}

func (e *sourceError) Error() string { return e.text }
func (e *sourceError) Unwrap() error { return e.cause }

// errorf is err as a sourceError, its reason in format's %s.
func (s *Source) errorf(format string, err error) error {
	return &sourceError{text: fmt.Sprintf(format, pg.Reason(err, s.cfg.URL)), cause: err}
}

// failedTo is err, from doing what: "what: the reason".
func (s *Source) failedTo(what string, err error) error {
	return s.errorf(strings.ReplaceAll(what, "%", "%%")+": %s", err)
}

// undefinedTable reports whether err is PostgreSQL's for a table that does
// not exist (42P01).
func undefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}
