package source

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5/pgconn"
)

// rangeRow is a row read from a range of a table's keys (see
// [Source.readRange]), for the snapshot or an added table's chunk; its
// record's position is set when it is emitted.
type rangeRow struct {
	table   string // quoted and schema-qualified
	key     []string
	ctid    string // a keyless table's row: its place, in place of a key (keyless.go)
	name    string // key joined by NULs, as changes' keys are matched
	version string
	rec     sdk.Record
}

// position is the row's position; lsn is empty in the first snapshot.
func (r rangeRow) position(lsn string) sdk.Position {
	return position{Table: r.table, Key: r.key, CTID: r.ctid, Version: r.version, LSN: lsn}.bytes()
}

// rangeRead is what readRange read.
type rangeRead struct {
	rows []rangeRow // those kept
	read int        // rows read, kept or not
	last []string   // the last key read; a keyless table's: the ctid its range ends before
	done bool       // with a limit: the table has no rows after last
}

// readRange reads, in key order, the rows of t after the key after (nil:
// from the start) up to and including the key upto (nil: no bound), at
// most limit (0: no limit), and keeps those whose version keep accepts
// (nil: all). A keyless table is read in ctid order instead, a range of
// blocks of about limit rows (keyless.go).
func (s *Source) readRange(ctx context.Context, t *sourceTable, after, upto []string, limit int, keep func(xmin uint32) bool) (rangeRead, error) {
	sql, args, res, err := s.rangeQuery(ctx, t, after, upto, limit)
	if err != nil {
		return res, err
	}
	rr := s.conn.PgConn().ExecParams(ctx, sql, args, nil, nil, nil)
	fields := rr.FieldDescriptions()
	// One read time for the rows of one query, which sdk.Snapshot keeps.
	now := strconv.FormatInt(time.Now().UnixNano(), 10)
	for rr.NextRow() {
		res.read++
		vals := rr.Values()
		var ctid string
		if t.keyless() {
			ctid, vals = string(vals[len(vals)-1]), vals[:len(vals)-1]
		}
		version := string(vals[len(vals)-1])
		vals = vals[:len(vals)-1]
		var key []string
		if !t.keyless() {
			key = make([]string, len(t.keys))
			for i, k := range t.keys {
				key[i] = string(vals[k])
			}
			res.last = key
		}
		if keep != nil {
			kept, err := t.keeps(version, keep)
			if err != nil {
				rr.Close()
				return rangeRead{}, err
			}
			if !kept {
				continue
			}
		}
		row := t.rangeRow(vals, fields, now, key, version)
		row.ctid = ctid
		res.rows = append(res.rows, row)
	}
	if _, err := rr.Close(); err != nil {
		return rangeRead{}, s.errorf("read table "+strings.ReplaceAll(t.ident, "%", "%%")+": %s", err)
	}
	if !t.keyless() {
		res.done = limit > 0 && res.read < limit
	}
	return res, s.snapshotRowTypes(ctx, t, res.rows)
}

// snapshotRowTypes gives rows' records the user types their columns use.
func (s *Source) snapshotRowTypes(ctx context.Context, t *sourceTable, rows []rangeRow) error {
	recs := make([]sdk.Record, len(rows))
	for i, r := range rows {
		recs[i] = r.rec
	}
	return s.snapshotTypes(ctx, t, recs)
}

// rangeQuery is the query of readRange, with its arguments, and, for a
// keyless table, where its range ends and whether it is the last.
func (s *Source) rangeQuery(ctx context.Context, t *sourceTable, after, upto []string, limit int) (string, [][]byte, rangeRead, error) {
	if !t.keyless() {
		sql, args := t.keyQuery(after, upto, limit)
		return sql, args, rangeRead{}, nil
	}
	r := blockRange{}
	if len(after) == 1 {
		r.after = after[0]
	}
	if upto == nil {
		var err error
		if r, err = s.nextBlocks(ctx, t, after, limit); err != nil {
			return "", nil, rangeRead{}, err
		}
	}
	sql, args := t.blockQuery(r, upto)
	return sql, args, rangeRead{last: []string{tid(r.end)}, done: r.done}, nil
}

// keyQuery is the query of readRange for a table with a key, with its
// arguments: the key's values as text, cast to the key's types.
func (t *sourceTable) keyQuery(after, upto []string, limit int) (string, [][]byte) {
	cols := make([]string, len(t.columns))
	for i, c := range t.columns {
		cols[i] = pg.Quote(c)
	}
	keys := make([]string, len(t.keys))
	for i, k := range t.keys {
		keys[i] = pg.Quote(t.columns[k])
	}
	var where []string
	var args [][]byte
	bound := func(op string, key []string) {
		p := make([]string, len(t.keys))
		for i, k := range t.keys {
			p[i] = "$" + strconv.Itoa(len(args)+1+i) + "::text::" + t.types[k]
		}
		where = append(where, fmt.Sprintf("(%s) %s (%s)", strings.Join(keys, ", "), op, strings.Join(p, ", ")))
		for _, k := range key {
			args = append(args, []byte(k))
		}
	}
	if after != nil {
		bound(">", after)
	}
	if upto != nil {
		bound("<=", upto)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT %s, xmin FROM %s", strings.Join(cols, ", "), t.rows())
	if len(where) > 0 {
		b.WriteString(" WHERE " + strings.Join(where, " AND "))
	}
	fmt.Fprintf(&b, " ORDER BY %s", strings.Join(keys, ", "))
	if limit > 0 {
		fmt.Fprintf(&b, " LIMIT %d", limit)
	}
	return b.String(), args
}

// keeps reports whether keep accepts the row version whose xmin's text
// is version.
func (t *sourceTable) keeps(version string, keep func(xmin uint32) bool) (bool, error) {
	xmin, err := strconv.ParseUint(version, 10, 32)
	if err != nil {
		return false, fmt.Errorf("read table %s: xmin %q is not a transaction ID", t.ident, version)
	}
	return keep(uint32(xmin)), nil
}

// rangeRow is the row of rangeQuery's result whose columns' values are
// vals, read at now, with the key's text key and the version's xmin.
func (t *sourceTable) rangeRow(vals [][]byte, fields []pgconn.FieldDescription, now string, key []string, version string) rangeRow {
	data := make(sdk.StructuredData, len(vals))
	for i, v := range vals {
		if v == nil {
			data[t.columns[i]] = nil
			continue
		}
		data[t.columns[i]] = value(fields[i].DataTypeOID, v)
	}
	var keyData sdk.Data // a keyless table's records have none
	if !t.keyless() {
		k := make(sdk.StructuredData, len(t.keys))
		for _, i := range t.keys {
			k[t.columns[i]] = data[t.columns[i]]
		}
		keyData = k
	}
	md := sdk.Metadata{"opencdc.collection": t.collection, "opencdc.readAt": now, pg.ColumnsKey: t.meta}
	return rangeRow{table: t.ident, key: key, name: strings.Join(key, "\x00"), version: version, rec: sdk.Snapshot(nil, md, keyData, data)}
}

// readColumns reads the named columns of the row of rel whose key's text
// is key into d; nothing when the row is gone.
func (s *Source) readColumns(ctx context.Context, rel *relation, key []string, names []string, d sdk.StructuredData) error {
	tb := rel.table
	if key == nil || tb.keyless() {
		return nil
	}
	cols := make([]string, len(names))
	for i, n := range names {
		cols[i] = pg.Quote(n)
	}
	where := make([]string, len(tb.keys))
	args := make([][]byte, len(tb.keys))
	for i, k := range tb.keys {
		where[i] = pg.Quote(tb.columns[k]) + " = $" + strconv.Itoa(i+1) + "::text::" + tb.types[k]
		args[i] = []byte(key[i])
	}
	sql := fmt.Sprintf("SELECT %s FROM %s WHERE %s", strings.Join(cols, ", "), tb.rows(), strings.Join(where, " AND "))
	rr := s.conn.PgConn().ExecParams(ctx, sql, args, nil, nil, nil)
	fields := rr.FieldDescriptions()
	for rr.NextRow() {
		for i, v := range rr.Values() {
			if v == nil {
				d[names[i]] = nil
				continue
			}
			d[names[i]] = value(fields[i].DataTypeOID, v)
		}
	}
	if _, err := rr.Close(); err != nil {
		return s.errorf("read the unchanged values of an update in "+strings.ReplaceAll(tb.ident, "%", "%%")+": %s", err)
	}
	return nil
}
