package source

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
)

// beginSnapshot starts the read-only transaction the snapshot is read in:
// under the exported snapshot name, or a fresh one when name is empty.
func (s *Source) beginSnapshot(ctx context.Context, name string) error {
	if _, err := s.conn.Exec(ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`); err != nil {
		return s.errorf("begin the snapshot's transaction: %s", err)
	}
	if name == "" {
		return nil
	}
	if _, err := s.conn.Exec(ctx, fmt.Sprintf(`SET TRANSACTION SNAPSHOT '%s'`, strings.ReplaceAll(name, "'", "''"))); err != nil {
		return s.errorf("import the replication slot's snapshot: %s", err)
	}
	return nil
}

// snapshot reads every table from s.snap on, in key order, fetchSize rows
// per query, and then ends the transaction. A query reads the rows after
// the last key read (keyset pagination over the primary key's index), so
// a restarted snapshot picks up after the last acked row the same way.
func (s *Source) snapshot(ctx context.Context) error {
	var progress *snapshotProgress
	if s.measured {
		progress = s.estimate(ctx, s.snap.table)
	}
	for i := s.snap.table; i < len(s.tables); i++ {
		t := s.tables[i]
		var after []string
		if i == s.snap.table {
			after = s.snap.key
		}
		for {
			recs, read, last, err := s.fetch(ctx, t, after)
			if err != nil {
				return err
			}
			progress.readRows(i, read)
			if len(recs) > 0 {
				s.produced.Add(int64(len(recs)))
				if err := s.q.put(ctx, recs, 0, nil); err != nil {
					return err
				}
			}
			if read < s.cfg.Snapshot.FetchSize {
				break
			}
			after = last
		}
		progress.tableDone(i)
	}
	if _, err := s.conn.Exec(ctx, `COMMIT`); err != nil {
		return s.errorf("end the snapshot's transaction: %s", err)
	}
	return nil
}

// fetch reads up to fetchSize rows of t after the key after (all from the
// start when nil), in text format, and returns as snapshot records those
// a resumed snapshot keeps (resumed), how many rows it read, and the last
// row's key.
func (s *Source) fetch(ctx context.Context, t *sourceTable, after []string) ([]sdk.Record, int, []string, error) {
	var keep func(xmin uint32) bool
	if s.resume != nil {
		// A row written since the first snapshot is left out: replication
		// streams it.
		keep = func(xmin uint32) bool { return s.resume.first.saw(xmin, s.resume.horizon) }
	}
	rows, read, last, err := s.readRange(ctx, t, after, nil, s.cfg.Snapshot.FetchSize, keep)
	if err != nil {
		return nil, 0, nil, err
	}
	recs := make([]sdk.Record, len(rows))
	for i, r := range rows {
		r.rec.Position = position{Table: t.ident, Key: r.key, Version: r.version}.bytes()
		recs[i] = r.rec
	}
	return recs, read, last, nil
}

// readRange reads, in key order, the rows of t after the key after (nil:
// from the start) up to and including the key upto (nil: no bound), at
// most limit (0: no limit), and returns those whose version keep accepts
// (nil: all), how many it read and the last key read.
func (s *Source) readRange(ctx context.Context, t *sourceTable, after, upto []string, limit int, keep func(xmin uint32) bool) ([]chunkRow, int, []string, error) {
	cols := make([]string, len(t.columns))
	for i, c := range t.columns {
		cols[i] = pg.Quote(c)
	}
	keys := make([]string, len(t.keys))
	for i, k := range t.keys {
		keys[i] = pg.Quote(t.columns[k])
	}
	params := func(first int) string {
		p := make([]string, len(t.keys))
		for i, k := range t.keys {
			p[i] = "$" + strconv.Itoa(first+i) + "::text::" + t.types[k]
		}
		return strings.Join(p, ", ")
	}
	var where []string
	var args [][]byte
	if after != nil {
		where = append(where, fmt.Sprintf("(%s) > (%s)", strings.Join(keys, ", "), params(len(args)+1)))
		for _, k := range after {
			args = append(args, []byte(k))
		}
	}
	if upto != nil {
		where = append(where, fmt.Sprintf("(%s) <= (%s)", strings.Join(keys, ", "), params(len(args)+1)))
		for _, k := range upto {
			args = append(args, []byte(k))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT %s, xmin FROM %s", strings.Join(cols, ", "), t.ident)
	if len(where) > 0 {
		b.WriteString(" WHERE " + strings.Join(where, " AND "))
	}
	fmt.Fprintf(&b, " ORDER BY %s", strings.Join(keys, ", "))
	if limit > 0 {
		fmt.Fprintf(&b, " LIMIT %d", limit)
	}
	rr := s.conn.PgConn().ExecParams(ctx, b.String(), args, nil, nil, nil)
	fields := rr.FieldDescriptions()
	// One read time for the rows of one query, which sdk.Snapshot keeps.
	now := strconv.FormatInt(time.Now().UnixNano(), 10)
	var rows []chunkRow
	var last []string
	read := 0
	for rr.NextRow() {
		read++
		vals := rr.Values()
		version := string(vals[len(vals)-1])
		vals = vals[:len(vals)-1]
		last = make([]string, len(t.keys))
		for i, k := range t.keys {
			last[i] = string(vals[k])
		}
		if keep != nil {
			xmin, err := strconv.ParseUint(version, 10, 32)
			if err != nil {
				rr.Close()
				return nil, 0, nil, fmt.Errorf("read table %s: xmin %q is not a transaction ID", t.ident, version)
			}
			if !keep(uint32(xmin)) {
				continue
			}
		}
		data := make(sdk.StructuredData, len(vals))
		for i, v := range vals {
			if v == nil {
				data[t.columns[i]] = nil
				continue
			}
			data[t.columns[i]] = value(fields[i].DataTypeOID, v)
		}
		key := make(sdk.StructuredData, len(t.keys))
		for _, k := range t.keys {
			key[t.columns[k]] = data[t.columns[k]]
		}
		md := sdk.Metadata{"opencdc.collection": t.collection, "opencdc.readAt": now, pg.ColumnsKey: t.meta}
		rows = append(rows, chunkRow{table: t.ident, key: last, name: strings.Join(last, "\x00"), version: version, rec: sdk.Snapshot(nil, md, key, data)})
	}
	if _, err := rr.Close(); err != nil {
		return nil, 0, nil, s.errorf("read table "+strings.ReplaceAll(t.ident, "%", "%%")+": %s", err)
	}
	recs := make([]sdk.Record, len(rows))
	for i, r := range rows {
		recs[i] = r.rec
	}
	if err := s.snapshotTypes(ctx, t, recs); err != nil {
		return nil, 0, nil, err
	}
	return rows, read, last, nil
}
