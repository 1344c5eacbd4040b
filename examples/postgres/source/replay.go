package source

import (
	"context"
	"fmt"
)

// replayed is a chunk of an earlier run whose window the stream is in.
type replayed struct {
	table   *sourceTable
	dropped map[string]bool
}

// replayLow opens the window of a chunk of an earlier run, while the
// stream replays what is before the start marker.
func (a *adder) replayLow(w watermark) {
	if t := a.byID[w.Table]; t != nil && !a.started {
		a.windows[w.chunkID()] = &replayed{table: t, dropped: map[string]bool{}}
	}
}

// replayHigh closes the window of a chunk of an earlier run and emits its
// rows again (replay).
func (a *adder) replayHigh(ctx context.Context, r *replicator, w watermark) error {
	win := a.windows[w.chunkID()]
	if win == nil {
		return nil // its low watermark is before the slot's confirmed LSN: the chunk was acknowledged
	}
	delete(a.windows, w.chunkID())
	if err := r.queuePending(ctx); err != nil {
		return err
	}
	return a.replay(ctx, r, win, w)
}

// replay emits again, at its high watermark, the rows of a chunk of an
// earlier run that are not acknowledged: the rows of its range whose
// version its snapshot saw and no change in its window replaced.
func (a *adder) replay(ctx context.Context, r *replicator, win *replayed, w watermark) error {
	if w.Last == nil {
		return nil
	}
	skip := a.s.from.skip
	if skip.LSN != "" && r.commitLSN < skip.lsn() {
		return nil // acknowledged
	}
	snap, err := parseTxSnapshot(w.Snap)
	if err != nil {
		return fmt.Errorf("watermark of table %s: %w", w.Table, err)
	}
	after := w.After
	if skip.added() && skip.lsn() == r.commitLSN && skip.Table == w.Table {
		after = skip.after() // the rows up to this one are acknowledged
	}
	if err := a.s.beginChunkTx(ctx); err != nil {
		return err
	}
	current, _, err := a.s.snapshotView(ctx)
	if err != nil {
		return err
	}
	seen, err := a.seen(win.table)
	if err != nil {
		return err
	}
	res, err := a.s.readRange(ctx, win.table, after, w.Last, 0, func(xmin uint32) bool {
		return snap.saw(xmin, current.xmax) && seen(xmin, current.xmax)
	})
	if err != nil {
		return err
	}
	if err := a.s.endChunkTx(ctx); err != nil {
		return err
	}
	return a.queue(ctx, r, a.records(res.rows, win.dropped, r.commitLSN))
}
