package source

import (
	"context"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
)

// liveChunk is a chunk read by this run, waiting for its high watermark.
type liveChunk struct {
	seq     int
	table   *sourceTable
	rows    []rangeRow
	snap    txSnapshot
	open    bool            // the low watermark has come
	dropped map[string]bool // keys changed in the window
	done    bool
	last    []string
	low     pglogrepl.LSN
	pin     *pin
}

// next reads the next chunk of the first table not done, between its
// watermarks, and records in the high watermark's transaction where the
// table's snapshot stands.
func (a *adder) next(ctx context.Context) error {
	if len(a.todo) == 0 {
		return nil
	}
	t := a.todo[0]
	a.seq++
	c := &liveChunk{seq: a.seq, table: t, dropped: map[string]bool{}, pin: a.pinSlot()}
	after := a.state[t.ident].After
	low, err := a.writeWatermark(ctx, a.s.conn, watermark{Kind: "low", Seq: c.seq, Table: t.ident, After: after})
	if err != nil {
		return err
	}
	c.low = low
	view, err := a.readChunk(ctx, c, after)
	if err != nil {
		return err
	}
	a.advance(c)
	a.live = c
	return a.writeHigh(ctx, c, after, view)
}

// readChunk reads c's rows, the next fetchSize after the key after, in a
// transaction of its own, leaving out the row versions whose changes
// stream; it returns which transactions the chunk's snapshot saw.
func (a *adder) readChunk(ctx context.Context, c *liveChunk, after []string) (string, error) {
	s := a.s
	if err := s.beginChunkTx(ctx); err != nil {
		return "", err
	}
	var view string
	var err error
	if c.snap, view, err = s.snapshotView(ctx); err != nil {
		return "", err
	}
	seen, err := a.seen(c.table)
	if err != nil {
		return "", err
	}
	res, err := s.readRange(ctx, c.table, after, nil, s.cfg.Snapshot.FetchSize, func(xmin uint32) bool { return seen(xmin, c.snap.xmax) })
	if err != nil {
		return "", err
	}
	if err := s.endChunkTx(ctx); err != nil {
		return "", err
	}
	c.rows, c.last, c.done = res.rows, res.last, res.done
	a.progress.readRows(a.finished, res.read)
	return view, nil
}

// advance notes in the state where the table's snapshot stands after c.
func (a *adder) advance(c *liveChunk) {
	st := a.state[c.table.ident]
	st.Done = c.done
	if c.last != nil {
		st.After = c.last
	}
	if c.done {
		st.After, st.Low = nil, c.low.String()
	}
	a.state[c.table.ident] = st
}

// writeHigh saves the state and writes c's high watermark in one
// transaction.
func (a *adder) writeHigh(ctx context.Context, c *liveChunk, after []string, view string) error {
	s := a.s
	tx, err := s.conn.Begin(ctx)
	if err != nil {
		return s.errorf("begin a high watermark's transaction: %s", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := s.saveTableStates(ctx, tx.Conn(), a.state); err != nil {
		return err
	}
	if _, err := a.writeWatermark(ctx, tx.Conn(), watermark{Kind: "high", Seq: c.seq, Table: c.table.ident, After: after, Last: c.last, Snap: view, Done: c.done}); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return s.errorf("commit a high watermark: %s", err)
	}
	return nil
}

// records are the snapshot records of the rows whose keys are not
// dropped, emitted at the high watermark that commits at lsn.
func (a *adder) records(rows []rangeRow, dropped map[string]bool, lsn pglogrepl.LSN) []sdk.Record {
	var recs []sdk.Record
	for _, row := range rows {
		if !dropped[row.name] {
			rec := row.rec
			rec.Position = row.position(lsn.String())
			recs = append(recs, rec)
		}
	}
	return recs
}

// queue hands chunk records to Conduit, keeping the replication
// connection alive while the records queued before wait to be taken.
func (a *adder) queue(ctx context.Context, r *replicator, recs []sdk.Record) error {
	if len(recs) == 0 {
		return nil
	}
	a.s.acks.queued.Add(int64(len(recs)))
	return a.s.q.put(ctx, recs, a.s.statusInterval, func() error { return r.status(ctx) })
}

// beginChunkTx starts a repeatable read transaction to read a chunk in.
func (s *Source) beginChunkTx(ctx context.Context) error {
	if _, err := s.conn.Exec(ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`); err != nil {
		return s.errorf("begin a chunk's transaction: %s", err)
	}
	return nil
}

// endChunkTx ends a chunk's transaction.
func (s *Source) endChunkTx(ctx context.Context) error {
	if _, err := s.conn.Exec(ctx, `COMMIT`); err != nil {
		return s.errorf("end a chunk's transaction: %s", err)
	}
	return nil
}
