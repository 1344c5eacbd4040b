package destination

import (
	"context"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
)

// runError is a run that failed at the record at index (within the run).
type runError struct {
	index int
	err   error
}

// writeRun writes a run; if a record's value cannot be rendered for its
// column, the records before it, and the error names it.
func (d *Destination) writeRun(ctx context.Context, r *run) *runError {
	cols, bad := r.render()
	if len(r.rows) == 0 {
		return bad
	}
	if err := d.writeRows(ctx, r, cols); err != nil {
		return err
	}
	return bad
}

// writeRows writes the rendered rows of a run with one statement, or, if
// that fails, as much of the run as it can before the failure.
func (d *Destination) writeRows(ctx context.Context, r *run, cols textColumns) *runError {
	all := len(r.rows)
	if r.class == create && r.table.hints.tryInsert() {
		err := d.exec(ctx, r, insert, cols, 0, all)
		if err == nil {
			r.table.hints.inserted(true)
			return nil
		}
		if !isUniqueViolation(err) {
			return d.runFailed(ctx, r, cols, 0, all, err)
		}
		r.table.hints.inserted(false)
	}
	if err := d.exec(ctx, r, r.class, cols, 0, all); err != nil {
		return d.runFailed(ctx, r, cols, 0, all, err)
	}
	return nil
}

// exec writes the run's rows[lo:hi] with one statement of class c: from
// [copyMin] rows on through COPY (see [Destination.copyRows]), else, or if
// COPY fails where a statement may not, with the rows' values as
// parameters.
func (d *Destination) exec(ctx context.Context, r *run, c class, cols textColumns, lo, hi int) error {
	if c.oneEach() {
		return d.execEach(ctx, r, cols, lo, hi)
	}
	keep := r.dedupe(cols, lo, hi)
	n := hi - lo
	if keep != nil {
		n = len(keep)
	}
	if n >= copyMin && !r.table.hints.noCopy.Load() {
		err := d.copyRows(ctx, r, c, cols, keep, lo, hi)
		if err == nil {
			d.metrics.written(c, "copy", hi-lo)
		}
		if err == nil || isDataError(err) || pg.Retryable(err) {
			return err
		}
		// Not a failure the statements would have: COPY or the staging
		// table may be what the table or the user does not allow (a
		// privilege on temporary tables, say). The statements decide.
		r.table.hints.noCopy.Store(true)
	}
	var args []any
	from := arrays
	switch {
	case n == 1 && keep != nil:
		args, from = cols.row(keep[0]), oneRow
	case n == 1:
		args, from = cols.row(lo), oneRow
	default:
		args = cols.args(keep, lo, hi)
	}
	sql := r.statement(c, from)
	run := func(sql string, args []any) error {
		_, err := d.pool.Exec(ctx, sql, args...)
		return err
	}
	var err error
	if d.written != nil {
		err = d.written.exec(run, sql, args, positionsOf(r.rows[lo:hi]))
	} else {
		err = run(sql, args)
	}
	if err == nil {
		d.metrics.written(c, "statement", hi-lo)
	}
	return err
}
