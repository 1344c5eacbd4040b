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
	cols := make([]string, len(t.columns))
	for i, c := range t.columns {
		cols[i] = pg.Quote(c)
	}
	keys := make([]string, len(t.keys))
	params := make([]string, len(t.keys))
	for i, k := range t.keys {
		keys[i] = pg.Quote(t.columns[k])
		params[i] = "$" + strconv.Itoa(i+1) + "::text::" + t.types[k]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT %s, xmin FROM %s", strings.Join(cols, ", "), t.ident)
	var args [][]byte
	if after != nil {
		fmt.Fprintf(&b, " WHERE (%s) > (%s)", strings.Join(keys, ", "), strings.Join(params, ", "))
		for _, k := range after {
			args = append(args, []byte(k))
		}
	}
	fmt.Fprintf(&b, " ORDER BY %s LIMIT %d", strings.Join(keys, ", "), s.cfg.Snapshot.FetchSize)

	rr := s.conn.PgConn().ExecParams(ctx, b.String(), args, nil, nil, nil)
	fields := rr.FieldDescriptions()
	oids := make([]uint32, len(fields))
	for i, f := range fields {
		oids[i] = f.DataTypeOID
	}
	// One read time for the rows of one query, which sdk.Snapshot keeps.
	now := strconv.FormatInt(time.Now().UnixNano(), 10)
	var recs []sdk.Record
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
		if s.resume != nil {
			xmin, err := strconv.ParseUint(version, 10, 32)
			if err != nil {
				rr.Close()
				return nil, 0, nil, fmt.Errorf("read table %s: xmin %q is not a transaction ID", t.ident, version)
			}
			if !s.resume.first.saw(uint32(xmin), s.resume.horizon) {
				continue // written since the first snapshot: replication streams it
			}
		}
		after := make(sdk.StructuredData, len(vals))
		for i, v := range vals {
			if v == nil {
				after[t.columns[i]] = nil
				continue
			}
			after[t.columns[i]] = value(oids[i], v)
		}
		key := make(sdk.StructuredData, len(t.keys))
		for _, k := range t.keys {
			key[t.columns[k]] = after[t.columns[k]]
		}
		md := sdk.Metadata{"opencdc.collection": t.collection, "opencdc.readAt": now, pg.ColumnsKey: t.meta}
		pos := position{Table: t.ident, Key: last, Version: version}
		recs = append(recs, sdk.Snapshot(pos.bytes(), md, key, after))
	}
	if _, err := rr.Close(); err != nil {
		return nil, 0, nil, s.errorf("read table "+strings.ReplaceAll(t.ident, "%", "%%")+": %s", err)
	}
	if err := s.snapshotTypes(ctx, t, recs); err != nil {
		return nil, 0, nil, err
	}
	return recs, read, last, nil
}
