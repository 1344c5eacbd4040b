package destination

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
)

// copyMin is the fewest rows a statement writes through COPY. Fewer go as
// one statement over arrays: one round trip, where COPY in a transaction
// of its own takes four (plain inserts) to six (through the staging table).
const copyMin = 100

// copyRows writes the run's rows[lo:hi] as class c, only those at indexes
// keep when it is not nil, through COPY in one transaction: plain inserts
// straight into the table where that does what INSERT does (see
// [table.copyIn]), everything else into a temporary staging table of text
// columns, then with one statement from it that casts and assigns the
// values as the statement over arrays does. COPY into the table reads each
// value with its column's input function and modifier, which takes and
// refuses the same values as that cast and assignment. In the exactly-once
// mode the positions of the rows go in with them, in the same transaction.
func (d *Destination) copyRows(ctx context.Context, r *run, c class, cols textColumns, keep []int, lo, hi int) error {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	// After a commit it does nothing; after a failure, the failure is
	// what Write reports.
	defer func() { _ = tx.Rollback(context.Background()) }()
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	*buf = cols.appendCopy((*buf)[:0], keep, lo, hi)
	copyIn := func(sql string) error {
		_, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(*buf), sql)
		return err
	}
	if c == insert && r.table.copyIn {
		err = copyIn("COPY " + r.table.ident + " (" + r.columnList() + ") FROM STDIN")
	} else {
		n := len(r.columns)
		if _, err = tx.Exec(ctx, stagingDDL(n)); err == nil {
			if err = copyIn("COPY " + stagingTable(n) + " FROM STDIN"); err == nil {
				_, err = tx.Exec(ctx, r.statement(c, staged))
			}
		}
	}
	if err != nil {
		return err
	}
	if d.written != nil {
		return d.written.commit(ctx, tx, positionsOf(r.rows[lo:hi]))
	}
	return tx.Commit(ctx)
}

// copyBuffers hold rows in COPY's text format: each COPY takes one and
// gives it back when it is done, so that the Writes in flight each have
// their own and a buffer grown once serves later COPYs.
var copyBuffers = sync.Pool{New: func() any { return new([]byte) }}

// stagingTable is the name of the session's staging table of n text
// columns, v1 to vn.
func stagingTable(n int) string { return "pg_temp.connkit_stage_" + strconv.Itoa(n) }

// stagingDDL creates the staging table of n columns in the session if it
// has none yet. Its rows last until the transaction ends.
func stagingDDL(n int) string {
	cols := make([]string, n)
	for i := range cols {
		cols[i] = "v" + strconv.Itoa(i+1) + " text"
	}
	return "CREATE TEMP TABLE IF NOT EXISTS " + stagingTable(n) + " (" + strings.Join(cols, ", ") + ") ON COMMIT DELETE ROWS"
}

// appendCopy appends the rows at indexes rows (nil: rows lo to hi) to b in
// COPY's text format: a line per row, its values separated by tabs, \N for
// NULL.
func (cols textColumns) appendCopy(b []byte, rows []int, lo, hi int) []byte {
	line := func(i int) {
		for c := range cols.values {
			if c > 0 {
				b = append(b, '\t')
			}
			if cols.null[c][i] {
				b = append(b, `\N`...)
			} else {
				b = appendCopyValue(b, cols.values[c][i])
			}
		}
		b = append(b, '\n')
	}
	if rows != nil {
		for _, i := range rows {
			line(i)
		}
		return b
	}
	for i := lo; i < hi; i++ {
		line(i)
	}
	return b
}

// appendCopyValue appends s to b as COPY's text format reads it back: a
// backslash, tab, newline and carriage return escaped, every other byte as
// it is.
func appendCopyValue(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		var esc byte
		switch s[i] {
		case '\\':
			esc = '\\'
		case '\t':
			esc = 't'
		case '\n':
			esc = 'n'
		case '\r':
			esc = 'r'
		default:
			continue
		}
		b = append(append(b, s[start:i]...), '\\', esc)
		start = i + 1
	}
	return append(b, s[start:]...)
}

// columnList is the run's columns, quoted and separated by commas.
func (r *run) columnList() string {
	cols := make([]string, len(r.columns))
	for i, col := range r.columns {
		cols[i] = pg.Quote(col)
	}
	return strings.Join(cols, ", ")
}
