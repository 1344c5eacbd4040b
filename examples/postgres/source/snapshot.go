package source

import (
	"context"
	"fmt"
	"strings"

	"github.com/connkit/connkit/sdk"
)

// snapshotFrom is where the snapshot starts: a table's index and the key
// after which to read it (nil: from its start).
type snapshotFrom struct {
	table int
	key   []string
}

// beginSnapshot starts the read-only transaction the snapshot is read in:
// under the exported snapshot name, or one of its own when name is empty.
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
		progress = followSnapshot(ctx, s.conn, s.metrics, s.catalog.tables, s.snap.table)
	}
	for i := s.snap.table; i < len(s.catalog.tables); i++ {
		var after []string
		if i == s.snap.table {
			after = s.snap.key
		}
		if err := s.snapshotTable(ctx, s.catalog.tables[i], after, func(read int) { progress.readRows(i, read) }); err != nil {
			return err
		}
		progress.tableDone(i)
	}
	if _, err := s.conn.Exec(ctx, `COMMIT`); err != nil {
		return s.errorf("end the snapshot's transaction: %s", err)
	}
	return nil
}

// snapshotTable queues the snapshot records of t's rows after the key
// after (all from the start when nil), telling read how many rows each
// query read.
func (s *Source) snapshotTable(ctx context.Context, t *sourceTable, after []string, read func(int)) error {
	for {
		recs, res, err := s.fetch(ctx, t, after)
		if err != nil {
			return err
		}
		read(res.read)
		if len(recs) > 0 {
			s.acks.queued.Add(int64(len(recs)))
			if err := s.q.put(ctx, recs, 0, nil); err != nil {
				return err
			}
		}
		if res.done {
			return nil
		}
		after = res.last
	}
}

// fetch reads up to fetchSize rows of t after the key after (all from the
// start when nil), in text format, and returns as snapshot records those
// a resumed snapshot keeps (resumed), and what it read.
func (s *Source) fetch(ctx context.Context, t *sourceTable, after []string) ([]sdk.Record, rangeRead, error) {
	var keep func(xmin uint32) bool
	if s.resume != nil {
		// A row written since the first snapshot is left out: replication
		// streams it.
		keep = func(xmin uint32) bool { return s.resume.first.saw(xmin, s.resume.horizon) }
	}
	res, err := s.readRange(ctx, t, after, nil, s.cfg.Snapshot.FetchSize, keep)
	if err != nil {
		return nil, res, err
	}
	recs := make([]sdk.Record, len(res.rows))
	for i, r := range res.rows {
		r.rec.Position = r.position("")
		recs[i] = r.rec
	}
	return recs, res, nil
}
