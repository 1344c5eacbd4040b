package source

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// Watermarks are transactional logical decoding messages
// (pg_logical_emit_message, prefix connkit), which pgoutput delivers in
// the stream with its messages option. A chunk's reader writes its low
// watermark before its transaction and its high one after; the engine
// sees them in the stream among the changes:
//
//   - Every change to a chunk's table that streams while the chunk is in
//     flight is noted with its transaction. At the high watermark, a
//     change whose transaction the chunk's transaction did not see takes
//     its row out of the chunk: the chunk read the row before the change,
//     which the destination has already got.
//   - The chunk's other rows become snapshot records there, among the
//     changes, each positioned by its table, key (a keyless row's ctid),
//     version (xmin) and the high watermark's commit LSN.
//
// Resuming: the slot is not confirmed past the low watermark of a chunk
// whose rows are not all acknowledged (pins), so a restart streams from
// before it again and sees its watermarks and the changes between them.
// At its high watermark it reads the chunk's range (which the watermark
// names) once more, keeping the row versions the chunk's transaction saw
// (the watermark names them too) that no change in the window replaced:
// the rows it emitted before, under the same positions, which an
// exactly-once destination skips. A start marker, written at Open, ends
// the replay; the next chunk starts where the state row says.

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
	Read  string   `json:"read,omitempty"`  // the table's read it belongs to (tableState.Signal)
	After []string `json:"after,omitempty"` // the chunk has the rows after this key (nil: from the start)
	Last  []string `json:"last,omitempty"`  // high: the chunk's rows end here (nil: it has none)
	Snap  string   `json:"snap,omitempty"`  // high: the transactions the chunk's transaction saw
	Done  bool     `json:"done,omitempty"`  // high: the chunk is the table's last
}

// chunkID names the chunk of a low or high watermark among every run's.
func (w watermark) chunkID() string { return w.Run + "/" + strconv.Itoa(w.Seq) }

// writeWatermark writes a watermark of this run on conn and returns its
// LSN.
func (e *engine) writeWatermark(ctx context.Context, conn *pgx.Conn, w watermark) (pglogrepl.LSN, error) {
	w.Slot, w.Run = e.src.cfg.Slot.Name, e.run
	content, _ := json.Marshal(w)
	var lsn string
	if err := conn.QueryRow(ctx, `SELECT pg_logical_emit_message(true, $1, $2)::text`, watermarkPrefix, string(content)).Scan(&lsn); err != nil {
		return 0, e.src.errorf("write a snapshot watermark (pg_logical_emit_message): %s", err)
	}
	return pglogrepl.ParseLSN(lsn)
}

// observe follows a pgoutput message for the snapshot: watermarks, and
// changes to the tables of chunks in flight.
func (e *engine) observe(ctx context.Context, r *replicator, msg pglogrepl.Message) error {
	e.src.signals.observe(msg)
	switch m := msg.(type) {
	case *pglogrepl.BeginMessage:
		e.xid = m.Xid
	case *pglogrepl.CommitMessage:
		return e.applySignals(ctx, r.commitLSN)
	case *pglogrepl.LogicalDecodingMessage:
		if m.Prefix != watermarkPrefix {
			return nil
		}
		var w watermark
		if json.Unmarshal(m.Content, &w) != nil || w.Slot != e.src.cfg.Slot.Name {
			return nil
		}
		return e.watermark(ctx, r, w)
	case *pglogrepl.InsertMessage:
		e.changed(r.relation(m.RelationID), m.Tuple, false)
	case *pglogrepl.UpdateMessage:
		rel := r.relation(m.RelationID)
		if m.OldTuple != nil {
			e.changed(rel, m.OldTuple, true)
		}
		e.changed(rel, m.NewTuple, false)
	case *pglogrepl.DeleteMessage:
		e.changed(r.relation(m.RelationID), m.OldTuple, true)
	}
	return nil
}

// changed notes a change to the row t of rel in the windows of its
// table's chunks: by its key, or a keyless table's by its old row (old),
// as a new row of a keyless table is in no chunk.
func (e *engine) changed(rel *relation, t *pglogrepl.TupleData, old bool) {
	if rel == nil || t == nil {
		return
	}
	var row string
	switch {
	case !rel.table.keyless():
		row = strings.Join(rel.keyText(t), "\x00")
	case old:
		row = rel.rowText(t)
	default:
		return
	}
	ch := change{xid: e.xid, row: row}
	for _, c := range e.inflight {
		if c.table == rel.table {
			c.changes = append(c.changes, ch)
		}
	}
	for _, w := range e.replays {
		if w.table == rel.table {
			w.changes = append(w.changes, ch)
		}
	}
}

// watermark handles one of the slot's watermarks: this run's start
// marker, the high watermark of one of this run's chunks, or one of a
// chunk of an earlier run that the stream replays.
func (e *engine) watermark(ctx context.Context, r *replicator, w watermark) error {
	switch {
	case w.Kind == "start" && w.Run == e.run:
		return e.replayEnded(ctx, r)
	case w.Kind == "high" && w.Run == e.run:
		return e.emit(ctx, r, w)
	case w.Run == e.run:
	case w.Kind == "low" && !e.started && e.tables[w.Table] != nil:
		e.replays[w.chunkID()] = &window{table: e.tables[w.Table], low: r.at}
	case w.Kind == "high":
		return e.replayHigh(ctx, r, w)
	}
	return nil
}

// replayEnded handles this run's start marker: the windows of earlier
// runs' chunks are over, and this run's first chunks are read.
func (e *engine) replayEnded(ctx context.Context, r *replicator) error {
	e.started, e.replays = true, map[string]*window{} // a window left open was never closed
	if err := r.queuePending(ctx); err != nil {
		return err
	}
	e.releaseAfterQueued(e.replayPin)
	if e.src.measured && len(e.todo) > 0 {
		e.progress = followSnapshot(ctx, e.src.conn, e.src.metrics, e.todo)
	}
	return e.fill(ctx)
}

// emit hands on, at its high watermark, the rows of this run's oldest
// chunk in flight that no change in its window replaced.
func (e *engine) emit(ctx context.Context, r *replicator, w watermark) error {
	if len(e.inflight) == 0 || e.inflight[0].seq != w.Seq {
		return nil
	}
	c, err := e.oldest(ctx)
	if err != nil {
		return err
	}
	if err := r.queuePending(ctx); err != nil {
		return err
	}
	return e.finish(ctx, c, r.commitLSN, func() error { return r.status(ctx) })
}

// window is a chunk of an earlier run whose low watermark the stream has
// passed.
type window struct {
	table   *sourceTable
	low     pglogrepl.LSN
	changes []change
}

// replayHigh closes the window of a chunk of an earlier run, notes how far
// its table is read, and emits its rows that are not acknowledged again:
// those of its range whose version its transaction saw and no change in
// its window replaced.
func (e *engine) replayHigh(ctx context.Context, r *replicator, w watermark) error {
	win := e.replays[w.chunkID()]
	if win == nil {
		return nil // its low watermark is before the slot's confirmed LSN: the chunk was acknowledged
	}
	delete(e.replays, w.chunkID())
	if err := r.queuePending(ctx); err != nil {
		return err
	}
	e.replayed(win, w)
	skip := e.src.from.skip
	if w.Last == nil || skip.LSN != "" && r.commitLSN < skip.lsn() {
		return nil // nothing read, or acknowledged
	}
	snap, err := parseTxSnapshot(w.Snap)
	if err != nil {
		return fmt.Errorf("watermark of table %s: %w", w.Table, err)
	}
	sp := span{after: w.After, upto: w.Last}
	if skip.inChunk() && skip.lsn() == r.commitLSN && skip.Table == w.Table {
		sp.after = skip.after() // the rows up to this one are acknowledged
	}
	seen, err := e.seen(win.table)
	if err != nil {
		return err
	}
	res, _, _, err := readSpan(ctx, e.src.conn, e.src, win.table, sp, func(xmin uint32, horizon uint64) bool {
		return snap.saw(xmin, horizon) && seen(xmin, horizon)
	})
	if err != nil {
		return err
	}
	recs := emitted(res.rows, win.changes, snap, r.commitLSN.String())
	if err := e.src.snapshotTypes(ctx, win.table, recs); err != nil {
		return err
	}
	return e.queue(ctx, recs, func() error { return r.status(ctx) })
}

// replayed notes in the state how far a chunk replayed from an earlier run
// read its table, when the state row was not saved after it.
func (e *engine) replayed(win *window, w watermark) {
	st := e.state[w.Table]
	if st.Done || st.Signal != w.Read || !slices.Equal(st.After, w.After) {
		return
	}
	if w.Last != nil {
		st.After = w.Last
	}
	if w.Done {
		st.Done, st.After, st.Low = true, nil, win.low.String()
		e.todo = slices.DeleteFunc(e.todo, func(t *sourceTable) bool { return t == win.table })
	}
	e.state[w.Table] = st
}

// pin keeps the slot's confirmed LSN at or before lsn until release
// records are acknowledged.
type pin struct {
	lsn     uint64
	release int64 // math.MaxInt64 until known
}

// pins are the chunks' pins: set by the reader's goroutine, read by Ack and
// by the stream when it confirms the server's WAL end.
type pins struct {
	mu   sync.Mutex
	list []*pin
}

// add pins the slot at lsn until released.
func (p *pins) add(lsn uint64) *pin {
	h := &pin{lsn: lsn, release: math.MaxInt64}
	p.mu.Lock()
	p.list = append(p.list, h)
	p.mu.Unlock()
	return h
}

// release releases h once n records are acknowledged.
func (p *pins) release(h *pin, n int64) {
	p.mu.Lock()
	h.release = n
	p.mu.Unlock()
}

// cap is lsn, or the lowest LSN pinned if lower, once acked records are
// acknowledged.
func (p *pins) cap(lsn uint64, acked int64) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = slices.DeleteFunc(p.list, func(h *pin) bool { return h.release <= acked })
	for _, h := range p.list {
		lsn = min(lsn, h.lsn)
	}
	return lsn
}

// capped is lsn, or less if a chunk whose rows are not all acknowledged
// needs the slot to stay before it.
func (s *Source) capped(lsn uint64) uint64 {
	if s.engine == nil {
		return lsn
	}
	return s.engine.pins.cap(lsn, s.acks.acked.Load())
}

// pinSlot keeps the slot at its confirmed LSN from now on, until released.
func (e *engine) pinSlot() *pin {
	if !e.streamed {
		return nil
	}
	return e.pins.add(e.src.acks.confirmed.Load())
}

// releaseAfterQueued releases h once every record queued so far is
// acknowledged.
func (e *engine) releaseAfterQueued(h *pin) {
	if h != nil {
		e.pins.release(h, e.src.acks.queued.Load())
	}
}
