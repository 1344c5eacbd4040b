package source

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// watermarkPrefix is the prefix of the source's logical decoding messages.
const watermarkPrefix = "connkit"

// watermark is the content of one of the source's logical decoding
// messages.
type watermark struct {
	Slot  string   `json:"slot"`
	Run   string   `json:"run"`             // the Open that wrote it
	Kind  string   `json:"kind"`            // low, high, or start (written at Open)
	Seq   int      `json:"seq,omitempty"`   // the chunk's number within its run
	Table string   `json:"table,omitempty"` // quoted and schema-qualified
	After []string `json:"after,omitempty"` // the chunk has the keys after this one (nil: from the start)
	Last  []string `json:"last,omitempty"`  // high: the last key the chunk read (nil: none)
	Snap  string   `json:"snap,omitempty"`  // high: the transactions the chunk's snapshot saw
	Done  bool     `json:"done,omitempty"`  // high: the chunk is the table's last
}

// chunkID names the chunk of a low or high watermark among every run's.
func (w watermark) chunkID() string { return w.Run + "/" + strconv.Itoa(w.Seq) }

// writeWatermark writes a watermark of this run on conn and returns its
// LSN.
func (a *adder) writeWatermark(ctx context.Context, conn *pgx.Conn, w watermark) (pglogrepl.LSN, error) {
	w.Slot, w.Run = a.s.cfg.Slot.Name, a.run
	content, _ := json.Marshal(w)
	var lsn string
	if err := conn.QueryRow(ctx, `SELECT pg_logical_emit_message(true, $1, $2)::text`, watermarkPrefix, string(content)).Scan(&lsn); err != nil {
		return 0, a.s.errorf("write a watermark for an added table (pg_logical_emit_message): %s", err)
	}
	return pglogrepl.ParseLSN(lsn)
}

// observe follows a pgoutput message for the added tables: watermarks,
// and changes to keys of a chunk in its window.
func (a *adder) observe(ctx context.Context, r *replicator, msg pglogrepl.Message) error {
	a.s.signals.observe(msg)
	switch m := msg.(type) {
	case *pglogrepl.BeginMessage:
		a.xid = m.Xid
	case *pglogrepl.CommitMessage:
		return a.applySignals(ctx, r.commitLSN)
	case *pglogrepl.LogicalDecodingMessage:
		if m.Prefix != watermarkPrefix {
			return nil
		}
		var w watermark
		if json.Unmarshal(m.Content, &w) != nil || w.Slot != a.s.cfg.Slot.Name {
			return nil
		}
		return a.watermark(ctx, r, w)
	case *pglogrepl.InsertMessage:
		a.changed(r, r.relations[m.RelationID], m.Tuple)
	case *pglogrepl.UpdateMessage:
		if m.OldTuple != nil {
			a.changed(r, r.relations[m.RelationID], m.OldTuple)
		}
		a.changed(r, r.relations[m.RelationID], m.NewTuple)
	case *pglogrepl.DeleteMessage:
		a.changed(r, r.relations[m.RelationID], m.OldTuple)
	}
	return nil
}

// changed drops the changed row's key from the chunks whose window the
// stream is in, and from the live chunk if its snapshot did not see the
// change's transaction.
func (a *adder) changed(r *replicator, rel *relation, t *pglogrepl.TupleData) {
	if rel == nil || rel.table == nil || t == nil {
		return
	}
	name := strings.Join(rel.keyText(t), "\x00")
	if c := a.live; c != nil && c.table == rel.table && (c.open || !c.snap.sees(a.xid)) {
		c.dropped[name] = true
	}
	for _, w := range a.windows {
		if w.table == rel.table {
			w.dropped[name] = true
		}
	}
}

// watermark handles one of the slot's watermarks: this run's start
// marker, a watermark of this run's live chunk, or one of a chunk of an
// earlier run that the stream replays (replay.go).
func (a *adder) watermark(ctx context.Context, r *replicator, w watermark) error {
	switch {
	case w.Kind == "start" && w.Run == a.run:
		return a.replayEnded(ctx, r)
	case w.Run == a.run:
		return a.liveWatermark(ctx, r, w)
	case w.Kind == "low":
		a.replayLow(w)
	case w.Kind == "high":
		return a.replayHigh(ctx, r, w)
	}
	return nil
}

// replayEnded handles this run's start marker: the windows of earlier
// runs' chunks are over, and the first chunk is read.
func (a *adder) replayEnded(ctx context.Context, r *replicator) error {
	a.started, a.windows = true, map[string]*replayed{} // a window left open was never closed
	if err := r.queuePending(ctx); err != nil {
		return err
	}
	a.releaseAfterQueued(a.replayPin)
	if a.s.measured && len(a.todo) > 0 {
		a.progress = followSnapshot(ctx, a.s.conn, a.s.metrics, a.todo, 0)
	}
	return a.next(ctx)
}

// liveWatermark handles a watermark of the live chunk: the low one opens
// its window; at the high one its rows that no change in the window
// replaced are queued, and the next chunk is read.
func (a *adder) liveWatermark(ctx context.Context, r *replicator, w watermark) error {
	c := a.live
	if c == nil || c.seq != w.Seq {
		return nil
	}
	if w.Kind == "low" {
		c.open = true
		return nil
	}
	if err := r.queuePending(ctx); err != nil {
		return err
	}
	recs := a.records(c.rows, c.dropped, r.commitLSN)
	a.live = nil
	if err := a.queue(ctx, r, recs); err != nil {
		return err
	}
	a.releaseAfterQueued(c.pin)
	// A signal may have stopped the table's read, or started it over.
	if c.done && a.state[c.table.ident].Done && len(a.todo) > 0 && a.todo[0] == c.table {
		a.progress.tableDone(a.finished)
		a.todo = a.todo[1:]
		a.finished++
	}
	return a.next(ctx)
}
