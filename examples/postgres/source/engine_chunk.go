package source

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A chunk is one range of a table's rows, read in a short transaction of
// its own by a goroutine of its own on a connection of the engine's
// (engine.go). A table with a key is read in key order, fetchSize rows a
// chunk; a keyless table (REPLICA IDENTITY FULL without a primary key,
// catalog_identity.go) in ranges of blocks, `WHERE ctid > after AND ctid <=
// '(end,0)'`, which PostgreSQL 14 and later answer with a TID range scan.
// While changes stream, the reader writes a low watermark before its
// transaction and a high one after it, in the order the chunks were
// planned.

// chunk is a range of one table that the engine has planned and not yet
// emitted. The engine sets the fields up to changes; the reader the ones
// after done, which the engine reads once done is closed.
type chunk struct {
	seq     int
	table   *sourceTable
	read    string // the table's read it belongs to (tableState.Signal when planned)
	span    span
	keep    func(xmin uint32, horizon uint64) bool // the row versions it may emit (seen); nil: all
	pin     *pin                                   // keeps the slot before its low watermark until its rows are acknowledged
	prev    *chunk                                 // planned before it: its high watermark goes first
	changes []change                               // changes to its table that streamed since it was planned

	done chan struct{} // closed when the reader has returned
	err  error
	low  pglogrepl.LSN // its low watermark's
	snap txSnapshot    // which transactions its transaction saw
	res  rangeRead
}

// span is a range of a table's rows: those after the key after (a
// keyless table's: the ctid; nil: from the start) up to and including the
// key upto (nil: no bound), at most limit (0: no limit). A span read up
// to a limit ends where its read ends; one without a limit is set in
// advance, and last says whether it reaches the end of the table's read.
type span struct {
	after, upto []string
	limit       int
	last        bool
}

// change is a change to a chunk's table that streamed while the chunk was
// in flight: the transaction that made it and the row it changed (rangeRow.name).
type change struct {
	xid uint32
	row string
}

// rangeRow is a row read from a span of a table; its record's position is
// set when it is emitted.
type rangeRow struct {
	table   string // quoted and schema-qualified
	key     []string
	ctid    string // a keyless table's row: its place, in place of a key
	name    string // what a change names it by: the key's text, or a keyless row's every value
	version string
	rec     sdk.Record
}

// position is the row's position; lsn is empty without watermarks.
func (r rangeRow) position(lsn string) sdk.Position {
	return position{Table: r.table, Key: r.key, CTID: r.ctid, Version: r.version, LSN: lsn}.bytes()
}

// rangeRead is what a span's read found.
type rangeRead struct {
	rows []rangeRow // those kept
	read int        // rows read, kept or not
	last []string   // the last key read; a keyless span's: its upper bound
	done bool       // nothing of the table is after the span
}

// readChunk reads c on conn: between watermarks when changes stream (the
// high one once the chunk planned before has written its own).
func (e *engine) readChunk(ctx context.Context, conn *pgx.Conn, c *chunk) error {
	w := watermark{Seq: c.seq, Table: c.table.ident, After: c.span.after, Read: c.read}
	if e.streamed {
		w.Kind = "low"
		var err error
		if c.low, err = e.writeWatermark(ctx, conn, w); err != nil {
			return err
		}
	}
	var view string
	var err error
	c.res, c.snap, view, err = readSpan(ctx, conn, e.src, c.table, c.span, c.keep)
	if err != nil || !e.streamed {
		return err
	}
	if c.prev != nil {
		select {
		case <-c.prev.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	w.Kind, w.Last, w.Snap, w.Done = "high", c.res.last, view, c.res.done
	_, err = e.writeWatermark(ctx, conn, w)
	return err
}

// readSpan reads sp of t on conn in a repeatable read transaction of
// its own, keeping the row versions that keep accepts (nil: all) given the
// transaction's xmax, and returns them with which transactions the
// transaction saw, also as txid_snapshot's text.
func readSpan(ctx context.Context, conn *pgx.Conn, s *Source, t *sourceTable, sp span, keep func(xmin uint32, horizon uint64) bool) (rangeRead, txSnapshot, string, error) {
	if _, err := conn.Exec(ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`); err != nil {
		return rangeRead{}, txSnapshot{}, "", s.errorf("begin a chunk's transaction: %s", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `ROLLBACK`) // a no-op once committed
	var view string
	if err := conn.QueryRow(ctx, `SELECT txid_current_snapshot()::text`).Scan(&view); err != nil {
		return rangeRead{}, txSnapshot{}, "", s.errorf("read a chunk's snapshot: %s", err)
	}
	snap, err := parseTxSnapshot(view)
	if err != nil {
		return rangeRead{}, txSnapshot{}, "", err
	}
	kept := func(uint32) bool { return true }
	if keep != nil {
		kept = func(xmin uint32) bool { return keep(xmin, snap.xmax) }
	}
	res, err := readRange(ctx, conn, t, sp, kept)
	if err != nil {
		return rangeRead{}, txSnapshot{}, "", s.errorf("read table "+strings.ReplaceAll(t.ident, "%", "%%")+": %s", err)
	}
	if _, err := conn.Exec(ctx, `COMMIT`); err != nil {
		return rangeRead{}, txSnapshot{}, "", s.errorf("end a chunk's transaction: %s", err)
	}
	return res, snap, view, nil
}

// records are the snapshot records of c's rows that no change unseen by
// its transaction replaced, at lsn (empty without watermarks). Rows are
// matched with changes as a multiset: a change takes away one row it
// names, so that of a keyless table's rows that are equal, as many go as
// changed.
func (c *chunk) records(lsn string) []sdk.Record {
	return emitted(c.res.rows, c.changes, c.snap, lsn)
}

// emitted is what records returns, for rows read under snap.
func emitted(rows []rangeRow, changes []change, snap txSnapshot, lsn string) []sdk.Record {
	gone := map[string]int{}
	for _, ch := range changes {
		if !snap.sees(ch.xid) {
			gone[ch.row]++
		}
	}
	recs := make([]sdk.Record, 0, len(rows))
	for _, row := range rows {
		if gone[row.name] > 0 {
			gone[row.name]--
			continue
		}
		rec := row.rec
		rec.Position = row.position(lsn)
		recs = append(recs, rec)
	}
	return recs
}

// readRange reads the rows of t in sp, in key order (a keyless table's in
// ctid order), and keeps those whose version keep accepts.
func readRange(ctx context.Context, conn *pgx.Conn, t *sourceTable, sp span, keep func(xmin uint32) bool) (rangeRead, error) {
	sql, args := t.rangeQuery(sp)
	rr := conn.PgConn().ExecParams(ctx, sql, args, nil, nil, nil)
	fields := rr.FieldDescriptions()
	// One read time for the rows of one query, which sdk.Snapshot keeps.
	now := strconv.FormatInt(time.Now().UnixNano(), 10)
	var res rangeRead
	for rr.NextRow() {
		res.read++
		row, err := t.rangeRow(rr.Values(), fields, now)
		if err != nil {
			rr.Close()
			return rangeRead{}, err
		}
		res.last = row.key
		if xmin, _ := strconv.ParseUint(row.version, 10, 32); keep(uint32(xmin)) {
			res.rows = append(res.rows, row)
		}
	}
	if _, err := rr.Close(); err != nil {
		return rangeRead{}, err
	}
	if sp.limit == 0 {
		res.last, res.done = sp.upto, sp.last
	} else {
		res.done = res.read < sp.limit || slices.Equal(res.last, sp.upto)
	}
	return res, nil
}

// rangeQuery is the query of a span of t, with its arguments.
func (t *sourceTable) rangeQuery(sp span) (string, [][]byte) {
	cols := make([]string, len(t.columns))
	for i, c := range t.columns {
		cols[i] = pg.Quote(c)
	}
	what := strings.Join(cols, ", ") + ", xmin"
	if t.keyless() {
		what += ", ctid"
	}
	where, order, args := t.spanWhere(sp)
	sql := fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s", what, t.rows(), where, order)
	if sp.limit > 0 {
		sql += fmt.Sprintf(" LIMIT %d", sp.limit)
	}
	return sql, args
}

// spanWhere is the WHERE clause (empty, or with its leading space) that
// picks sp's rows of t, the order they are read in and the clause's
// arguments: the key's values as text, cast to the key's types, or a
// keyless table's ctids.
func (t *sourceTable) spanWhere(sp span) (where, order string, args [][]byte) {
	order, casts := "ctid", []string{"tid"}
	if !t.keyless() {
		keys := make([]string, len(t.keys))
		casts = make([]string, len(t.keys))
		for i, k := range t.keys {
			keys[i], casts[i] = pg.Quote(t.columns[k]), t.types[k]
		}
		order = strings.Join(keys, ", ")
	}
	var conds []string
	bound := func(op string, key []string) {
		p := make([]string, len(key))
		for i := range key {
			p[i] = "$" + strconv.Itoa(len(args)+1+i) + "::text::" + casts[i]
		}
		conds = append(conds, fmt.Sprintf("(%s) %s (%s)", order, op, strings.Join(p, ", ")))
		for _, k := range key {
			args = append(args, []byte(k))
		}
	}
	if sp.after != nil {
		bound(">", sp.after)
	}
	if sp.upto != nil {
		bound("<=", sp.upto)
	}
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	return where, order, args
}

// boundary returns the key of t's row sp.limit rows into sp (the last of
// a chunk of that many), or nil when sp has fewer rows: a chunk planned
// up to it leaves the rest to the next chunk, which can be read beside it.
func (t *sourceTable) boundary(ctx context.Context, conn *pgx.Conn, sp span) ([]string, error) {
	where, order, args := t.spanWhere(sp)
	sql := fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s OFFSET %d LIMIT 1", order, t.rows(), where, order, sp.limit-1)
	rr := conn.PgConn().ExecParams(ctx, sql, args, nil, nil, nil)
	var key []string
	for rr.NextRow() {
		for _, v := range rr.Values() {
			key = append(key, string(v))
		}
	}
	_, err := rr.Close()
	return key, err
}

// rangeRow is the row of a span's query whose values are vals (the
// columns, xmin, and a keyless table's ctid), read at now.
func (t *sourceTable) rangeRow(vals [][]byte, fields []pgconn.FieldDescription, now string) (rangeRow, error) {
	row := rangeRow{table: t.ident}
	if t.keyless() {
		row.ctid, vals = string(vals[len(vals)-1]), vals[:len(vals)-1]
	}
	row.version, vals = string(vals[len(vals)-1]), vals[:len(vals)-1]
	if _, err := strconv.ParseUint(row.version, 10, 32); err != nil {
		return row, fmt.Errorf("xmin %q is not a transaction ID", row.version)
	}
	data := make(sdk.StructuredData, len(vals))
	for i, v := range vals {
		if v == nil {
			data[t.columns[i]] = nil
			continue
		}
		data[t.columns[i]] = value(fields[i].DataTypeOID, v)
	}
	var keyData sdk.Data // a keyless table's records have none
	if t.keyless() {
		row.name = rowText(vals)
	} else {
		row.key = make([]string, len(t.keys))
		k := make(sdk.StructuredData, len(t.keys))
		for i, c := range t.keys {
			row.key[i] = string(vals[c])
			k[t.columns[c]] = data[t.columns[c]]
		}
		row.name, keyData = strings.Join(row.key, "\x00"), k
	}
	md := sdk.Metadata{sdk.MetadataCollection: t.collection, sdk.MetadataReadAt: now, pg.ColumnsKey: t.meta}
	row.rec = sdk.Snapshot(nil, md, keyData, data)
	return row, nil
}

// rowText names a keyless row by its every value's text, as a change's
// old row names it (relation.rowText): each value after a NUL (which text
// never holds) and a tag, v for a value and n for NULL.
func rowText(vals [][]byte) string {
	var b strings.Builder
	for _, v := range vals {
		if v == nil {
			b.WriteString("\x00n")
			continue
		}
		b.WriteString("\x00v")
		b.Write(v)
	}
	return b.String()
}

// tid is the ctid before the first row of block b.
func tid(b uint64) string { return "(" + strconv.FormatUint(b, 10) + ",0)" }

// parseTID returns the block of a ctid's text, "(block,offset)".
func parseTID(s string) (uint64, error) {
	inner, ok := strings.CutPrefix(s, "(")
	if inner, ok2 := strings.CutSuffix(inner, ")"); ok && ok2 {
		if b, o, ok := strings.Cut(inner, ","); ok {
			block, err1 := strconv.ParseUint(b, 10, 32)
			_, err2 := strconv.ParseUint(o, 10, 16)
			if err1 == nil && err2 == nil {
				return block, nil
			}
		}
	}
	return 0, fmt.Errorf("ctid %q is not a row's place (block,offset)", s)
}
