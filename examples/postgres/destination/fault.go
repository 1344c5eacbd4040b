package destination

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
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

// runFailed finds out what of the run's rows[lo:hi], which failed to
// write as one statement with err, it can write before the failure, and
// whose failure that is. The rows before lo are written.
//
// If the database rejected the statement for its data (a value or a
// constraint), the rows are bisected: each half written on its own (and
// committed when it succeeds), the half that fails bisected again, until
// the one record at fault is found: about 2·log2(len) statements for one
// bad record, which is then the failure of that record alone. Any other
// failure is the failure of the first record not written, and its error
// says whether the records from it on may be retried.
func (d *Destination) runFailed(ctx context.Context, r *run, cols textColumns, lo, hi int, err error) *runError {
	for {
		switch {
		case ctx.Err() != nil:
			return &runError{lo, fmt.Errorf("record at position %q: table %s: %w", r.rows[lo].position, r.table.name, ctx.Err())}
		case !isDataError(err):
			return &runError{lo, d.systemError(r, lo, err)}
		case hi-lo == 1:
			return &runError{lo, sdk.RecordFault(d.recordError(ctx, r, cols, lo, err))}
		}
		mid := lo + (hi-lo)/2
		if e := d.exec(ctx, r, r.class, cols, lo, mid); e != nil {
			hi, err = mid, e
			continue
		}
		lo = mid
		if e := d.exec(ctx, r, r.class, cols, lo, hi); e != nil {
			err = e
			continue
		}
		if hi == len(r.rows) {
			return nil
		}
		// The rows hi was narrowed from, which a failure ahead of them
		// had kept back, are still to write.
		lo, hi = hi, len(r.rows)
		if err = d.exec(ctx, r, r.class, cols, lo, hi); err == nil {
			return nil
		}
	}
}

// systemError is err, a failure that is not the data's, for the run's
// record i and those after it: marked retryable when the database may be
// asked again (see [retryable]). A plain insert that may have committed
// is retried only in the exactly-once mode, which finds out whether it did.
func (d *Destination) systemError(r *run, i int, err error) error {
	e := fmt.Errorf("record at position %q: table %s: %s", r.rows[i].position, r.table.name, pg.Reason(err, d.cfg.URL))
	switch {
	case pg.Retryable(err) && (!r.class.appliesTwice() || !pg.MayHaveCommitted(err) || d.written != nil):
		return sdk.Retryable(e)
	case pg.Retryable(err):
		return fmt.Errorf("%w (the connection broke after the statement was sent, so its rows may or may not be written; a plain insert, or an update or delete without a key, is not retried, since it could apply twice)", e)
	}
	return e
}

// recordError is the error of the run's record i, which the database
// rejected alone with err: its position, the table, and, when the error
// is about one of its values, the column and the column's type, then the
// database's reason. The database names the column of a NOT NULL
// violation; for a value it rejected, each of the record's values is
// checked on its own, as the statement would take it, to find the one.
func (d *Destination) recordError(ctx context.Context, r *run, cols textColumns, i int, err error) error {
	prefix := fmt.Sprintf("record at position %q: table %s", r.rows[i].position, r.table.name)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return fmt.Errorf("%s: %s", prefix, pg.Message(err))
	}
	col := pgErr.ColumnName
	if col == "" && strings.HasPrefix(pgErr.Code, "22") {
		col = d.badColumn(ctx, r, cols, i)
	}
	if col == "" {
		return fmt.Errorf("%s: %s", prefix, pg.Message(err))
	}
	return fmt.Errorf("%s: column %q (%s): %s", prefix, col, r.table.types[col], pg.Message(err))
}

// badColumn returns the column whose value in the run's row i the
// database does not take, or "" if it finds none: a value it cannot read
// as the column's type, or one that does not fit the column's modifier
// (an explicit cast to the column's type changes it, where assigning it,
// as the statement does, fails).
func (d *Destination) badColumn(ctx context.Context, r *run, cols textColumns, i int) string {
	for c, col := range r.rendered() {
		if cols.null[c][i] {
			continue
		}
		base, typ := r.table.bases[col], r.table.types[col]
		sql := "SELECT $1::text::" + base + " IS NULL"
		if base != typ {
			sql = "SELECT ($1::text::" + base + ")::" + typ + "::text IS DISTINCT FROM $1::text::" + base + "::text"
		}
		var changed bool
		if err := d.pool.QueryRow(ctx, sql, cols.values[c][i]).Scan(&changed); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) {
				return col
			}
			return "" // the database did not answer
		}
		if changed {
			return col
		}
	}
	return ""
}
