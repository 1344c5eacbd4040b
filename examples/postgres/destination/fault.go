package destination

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// Whose failure an error is decides what the SDK does with the records:
// the failure of one record (the database rejected its data) nacks that
// record alone, and the records after it are written; a failure of the
// system (the connection, the server shutting down, a deadlock) is retried
// from the first record not written; anything else (a missing table, a
// permission) nacks every record not written.

// isDataError reports whether the database rejected a statement for the
// data it was given, which one of its records is to blame for: SQLSTATE
// class 22 (a data exception: a value its column's type does not take,
// text that is not valid in the database's encoding), 23 (an integrity
// constraint: NOT NULL, unique, check, foreign key) and 21 (a cardinality
// violation: two rows of one statement touching the same row), and 42703
// (an undefined column: the statements name only the columns of their
// records, so this is a column the table no longer has, dropped since the
// destination read it).
func isDataError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) != 5 {
		return false
	}
	if pgErr.Code == "42703" {
		return true
	}
	switch pgErr.Code[:2] {
	case "21", "22", "23":
		return true
	}
	return false
}

// isUniqueViolation reports whether err is a unique constraint's violation.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}
