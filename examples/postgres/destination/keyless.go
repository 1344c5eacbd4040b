package destination

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
)

// A record without a key (a table without a primary key, read with
// REPLICA IDENTITY FULL) is applied as PostgreSQL's own logical
// replication applies it: an update changes one row equal to its old row
// (payload.before), a delete deletes one such row, every column compared
// with IS NOT DISTINCT FROM, so that NULLs match. Of rows that are exact
// duplicates, one is changed. An update whose old row is not there
// inserts its new row, as an upsert does for a keyed record: a postgres
// source leaves a row changed before its chunk is read to its changes,
// so the update is all the destination gets of it. A
// delete whose old row is not there changes nothing. Both are logged and
// counted, and acknowledged. A record replayed after a crash (at least
// once) is such a record, unless a duplicate of its row is left; the
// exactly-once mode skips it.
//
// Keyless records share their collection's lane among Writes in flight
// together (see [Destination.WriteSplit]): an update or delete waits for
// the inserts of the Writes before it.

// keyless sets the class of a run without key columns from the old row
// of its record: an update or delete that has one changes one row equal
// to it; an update without one is a plain insert of its new row, since
// nothing says which row it changes; a delete without one cannot be
// applied.
func (r *run) keyless(before map[string]any, last *run) error {
	switch {
	case r.class == remove && len(before) == 0:
		return sdk.RecordFault(errors.New("a delete needs a key or the old row: set the key parameter, give the record a key, or give it the whole old row in payload.before (a postgres source does for a table with REPLICA IDENTITY FULL)"))
	case r.class == remove:
		r.class = deleteOne
	case r.class == upsert && len(before) > 0:
		r.class = updateOne
	default:
		r.class = insert
		return nil
	}
	r.match = sortedKeys(before, nil, last.match)
	return nil
}

// oneEach reports whether class c applies each record to one row it
// finds by the record's old row.
func (c class) oneEach() bool { return c == updateOne || c == deleteOne }

// rendered are the columns whose values a run renders, in order: those
// written, then those of the old row that find the row.
func (r *run) rendered() []string {
	if len(r.match) == 0 {
		return r.columns
	}
	return append(slices.Clip(r.columns), r.match...)
}

// named are the columns the run names, each once, sorted.
func (r *run) named() []string {
	if len(r.match) == 0 {
		return r.columns
	}
	return slices.Compact(slices.Sorted(slices.Values(r.rendered())))
}

// textEquality is which columns of a table have types without a default
// equality (a btree operator class), such as json, xml, point or a
// composite, so that rows are compared on their text there. Read from
// the catalog when a run first needs it.
type textEquality struct {
	mu   sync.Mutex
	read bool
	cols map[string]bool
}

// textCompared returns the columns of t compared as text (see
// [textEquality]).
func (d *Destination) textCompared(ctx context.Context, t *table) (map[string]bool, error) {
	t.textEq.mu.Lock()
	defer t.textEq.mu.Unlock()
	if t.textEq.read {
		return t.textEq.cols, nil
	}
	// A domain is compared as its base type, an array as its element's, an
	// enum or range by the operator classes of every enum or range; a type
	// an operator class takes by an implicit binary coercion (varchar as
	// text) has it.
	rows, err := d.pool.Query(ctx, `
		SELECT a.attname FROM pg_attribute a
		JOIN pg_type ty ON ty.oid = a.atttypid
		JOIN pg_type b ON b.oid = CASE WHEN ty.typtype = 'd' THEN ty.typbasetype ELSE ty.oid END
		JOIN pg_type x ON x.oid = CASE WHEN b.typcategory = 'A' AND b.typelem <> 0 THEN b.typelem ELSE b.oid END
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
		AND NOT EXISTS (SELECT FROM pg_opclass o JOIN pg_am m ON m.oid = o.opcmethod
			WHERE m.amname = 'btree' AND o.opcdefault AND (o.opcintype = CASE x.typtype
				WHEN 'e' THEN 'anyenum'::regtype WHEN 'r' THEN 'anyrange'::regtype
				WHEN 'm' THEN to_regtype('anymultirange') ELSE x.oid END
			OR EXISTS (SELECT FROM pg_cast c WHERE c.castsource = x.oid AND c.casttarget = o.opcintype AND c.castmethod = 'b' AND c.castcontext = 'i')))`, t.ident)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	t.textEq.cols = map[string]bool{}
	for _, n := range names {
		t.textEq.cols[n] = true
	}
	t.textEq.read = true
	return t.textEq.cols, nil
}

// statementEach is the SQL applying one record of an updateOne or
// deleteOne run: its parameters are the values written ($1 to $n, text,
// cast as [run.statement] casts them) and then the old row's. The row is
// found by a subquery that takes the first equal row (by its table and
// ctid, which a partition or child table shares), as PostgreSQL's apply
// takes the first it finds. Each column is compared as IS NOT DISTINCT
// FROM does, but spelt (c = $k OR c IS NULL AND $k IS NULL), which the
// planner, knowing $k, reduces to a condition an index on c serves (as
// PostgreSQL's apply uses an index where it can); a column whose type has
// no equality is compared on its text (see [textEquality]).
func (r *run) statementEach(textEq map[string]bool) string {
	n := len(r.columns)
	where := make([]string, len(r.match))
	for i, col := range r.match {
		c, p := "t."+pg.Quote(col), "$"+strconv.Itoa(n+i+1)+"::text::"+r.table.bases[col]
		if textEq[col] {
			where[i] = c + "::text IS NOT DISTINCT FROM " + p + "::text"
		} else {
			where[i] = "(" + c + " = " + p + " OR " + c + " IS NULL AND " + p + " IS NULL)"
		}
	}
	find := " WHERE (tableoid, ctid) = (SELECT t.tableoid, t.ctid FROM " + r.table.ident + " AS t WHERE " + strings.Join(where, " AND ") + " LIMIT 1)"
	if r.class == deleteOne {
		return "DELETE FROM " + r.table.ident + find
	}
	set, names, values := make([]string, n), make([]string, n), make([]string, n)
	for i, col := range r.columns {
		names[i], values[i] = pg.Quote(col), "$"+strconv.Itoa(i+1)+"::text::"+r.table.bases[col]
		set[i] = names[i] + " = " + values[i]
	}
	// The INSERT adds the new row only when the UPDATE found no old one:
	// its count says which.
	return "WITH changed AS (UPDATE " + r.table.ident + " SET " + strings.Join(set, ", ") + find + " RETURNING 1) " +
		"INSERT INTO " + r.table.ident + " (" + strings.Join(names, ", ") + ") SELECT " + strings.Join(values, ", ") + " WHERE NOT EXISTS (SELECT FROM changed)"
}

// execEach applies the run's rows[lo:hi], an updateOne or deleteOne run,
// with a statement each, in order, sent together in one round trip and
// one transaction (with their positions in the exactly-once mode). A
// record whose old row is not there is logged and counted once the
// transaction commits.
func (d *Destination) execEach(ctx context.Context, r *run, cols textColumns, lo, hi int) error {
	textEq, err := d.textCompared(ctx, r.table)
	if err != nil {
		return err
	}
	sql := r.statementEach(textEq)
	var b pgx.Batch
	for i := lo; i < hi; i++ {
		b.Queue(sql, cols.row(i)...)
	}
	var missed []int
	read := func(br pgx.BatchResults) error {
		for i := lo; i < hi; i++ {
			tag, err := br.Exec()
			if err != nil {
				return err
			}
			inserted := r.class == updateOne && tag.RowsAffected() == 1 // the INSERT: no old row
			gone := r.class == deleteOne && tag.RowsAffected() == 0
			if inserted || gone {
				missed = append(missed, i)
			}
		}
		return nil
	}
	if d.written != nil {
		err = d.written.send(ctx, d.pool, &b, positionsOf(r.rows[lo:hi]), read)
	} else {
		br := d.pool.SendBatch(ctx, &b)
		err = read(br)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	written := hi - lo
	if r.class == deleteOne {
		written -= len(missed)
	}
	d.metrics.written(r.class, "statement", written)
	d.notFound(ctx, r, missed)
	return nil
}

// notFound logs and counts the records of r at indexes missed, whose old
// rows were not in the table.
func (d *Destination) notFound(ctx context.Context, r *run, missed []int) {
	if len(missed) == 0 {
		return
	}
	op := r.class.operation()
	for _, i := range missed {
		what := "the delete changed nothing"
		if r.class == updateOne {
			what = "the update inserted the record's payload.after, as an upsert does"
		}
		sdk.Logger(ctx).Warn(fmt.Sprintf("postgres: record at position %q: table %s has no row equal to the record's payload.before, so %s", r.rows[i].position, r.table.name, what))
	}
	d.metrics.notFound.Add(float64(len(missed)), op)
}

// appliesTwice reports whether writing a record of class c again, after
// it was written, changes the table again: a plain insert adds its row
// again, and an update or delete without a key changes another row equal
// to its old row, if there is one.
func (c class) appliesTwice() bool { return c == insert || c.oneEach() }

// oldRow is how an error names a column of a record's old row.
func oldRow(old bool) string {
	if old {
		return "payload.before: "
	}
	return ""
}
