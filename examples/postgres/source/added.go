package source

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Tables added to `tables` while the source streams are snapshotted in
// chunks while the changes keep streaming, with watermarks as DBLog
// (Netflix, 2020) does it, without a table lock:
//
//   - A chunk is the next snapshot.fetchSize rows in key order. The source
//     writes a low watermark, reads the chunk (keeping which transactions
//     its snapshot saw), then writes a high watermark. Watermarks are
//     transactional logical decoding messages (pg_logical_emit_message,
//     prefix connkit), which pgoutput delivers in the stream with its
//     messages option.
//   - While the stream is between the low and the high watermark, every
//     change to a key of the chunk removes that key from the chunk: the
//     change is as new as the row read, or newer. So is a change by a
//     transaction the chunk's snapshot did not see.
//   - A row version whose change streams is left out of every chunk, so
//     that no row comes twice: one a snapshot exported by a temporary slot
//     right after the table joined the publication did not see, or one
//     written by a transaction the stream delivered before that snapshot's
//     consistent point (tableState.Seen, tableState.Early).
//   - At the high watermark the chunk's remaining rows become snapshot
//     records, among the changes, each positioned by its table, key and
//     row version (xmin) and the high watermark's commit LSN.
//
// Which tables a slot's snapshots covered is kept in the `tables` column of
// snapshot.stateTable: a table of `tables` that the slot's row does not
// list is new. (A row written before that column existed counts the tables
// in the publication as covered.) The row also keeps, for each added table,
// the key after which its next chunk starts, updated in the high
// watermark's transaction, and whether it is done.
//
// Resuming: the slot is not confirmed past the low watermark of a chunk
// whose rows are not all acknowledged, so a restart streams from before it
// again (from the slot's confirmed LSN, not from the position), skipping
// what was acknowledged. It sees the chunk's watermarks and the changes
// between them again, and at the high watermark reads the chunk's range
// (which the watermark names) once more, keeping the row versions the
// chunk's snapshot saw (the high watermark names it) that no change in the
// window replaced: the rows it emitted before, under the same positions,
// which an exactly-once destination skips. A row changed since comes from
// its changes, which the restart streams again. A start marker, written at
// Open, ends the replay; the next chunk starts after the key the state row
// names.

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
	After []string `json:"after,omitempty"` // the chunk holds the keys after this one (nil: from the start)
	Last  []string `json:"last,omitempty"`  // high: the last key the chunk read (nil: none)
	Snap  string   `json:"snap,omitempty"`  // high: the transactions the chunk's snapshot saw
	Done  bool     `json:"done,omitempty"`  // high: the chunk is the table's last
}

// tableState is a table's entry in the `tables` column of the state row.
type tableState struct {
	After []string `json:"after,omitempty"` // an added table's next chunk starts after this key
	Done  bool     `json:"done,omitempty"`  // its snapshot is read
	// Seen is which transactions a snapshot exported right after the table
	// was added to the publication saw (txid_snapshot's text): a row
	// version it did not see was written by a transaction whose changes
	// stream, so the table's chunks leave it out.
	Seen string `json:"seen,omitempty"`
	// Early is the transactions that changed the table after it was added
	// to the publication and committed before that snapshot's consistent
	// point: the snapshot saw them and their changes stream, so the chunks
	// leave their row versions out too.
	Early []uint32 `json:"early,omitempty"`
	// Low is the LSN of the low watermark of a done added table's last
	// chunk: while the slot is confirmed at or before it, that chunk's rows
	// may not all be acknowledged, and a restart reads it again.
	Low string `json:"low,omitempty"`
}

// adder snapshots the added tables from the stream's goroutine; its pins
// are also read by Ack.
type adder struct {
	s     *Source
	run   string
	state map[string]tableState // by table ident
	todo  []*sourceTable        // added tables not done, in name order
	byID  map[string]*sourceTable

	started    bool                       // the start marker has come: the replay is over
	seq        int                        // the last chunk started
	live       *liveChunk                 // read, not yet emitted
	windows    map[string]*replayed       // chunks of earlier runs whose low watermark the stream passed, by run and seq
	xid        uint32                     // the transaction being decoded
	progress   *snapshotProgress          // index i follows todo[i] as it was at the start marker
	finished   int                        // tables done since the start marker
	view       string                     // the snapshot exportSeen exported, until recorded
	consistent pglogrepl.LSN              // its consistent point
	early      map[string]map[uint32]bool // by table: transactions streamed before consistent, until recorded
	replayPin  *pin                       // keeps the slot where it was at Open until the replay is acknowledged

	mu   sync.Mutex
	pins []*pin
}

// pin keeps the slot's confirmed LSN at or before lsn until release
// records are acknowledged.
type pin struct {
	lsn     uint64
	release int64 // math.MaxInt64 until known
}

// liveChunk is a chunk read by this run, waiting for its high watermark.
type liveChunk struct {
	seq     int
	table   *sourceTable
	rows    []chunkRow
	snap    txSnapshot
	open    bool            // the low watermark has come
	dropped map[string]bool // keys changed in the window
	done    bool
	last    []string
	low     pglogrepl.LSN
	pin     *pin
}

// replayed is a chunk of an earlier run whose window the stream is in.
type replayed struct {
	table   *sourceTable
	dropped map[string]bool
}

// chunkRow is a row read for a chunk; its record's position is set when
// it is emitted.
type chunkRow struct {
	table   string // quoted and schema-qualified
	key     []string
	name    string // key joined by NULs, as changes' keys are matched
	version string
	rec     sdk.Record
}

// planAddedTables finds, before the publication is changed, the tables a
// source restarted from a change's position has not snapshotted, and
// records them in the state row. The snapshot of the added tables starts in
// startAdding.
func (s *Source) planAddedTables(ctx context.Context, from sdk.Position, pos position) error {
	if from == nil || pos.snapshot() || s.cfg.Snapshot.Mode != "initial" {
		return nil
	}
	state, ok, err := s.loadTableStates(ctx)
	if err != nil {
		return err
	}
	if !ok {
		// A row written before the tables were recorded: the tables the
		// publication has are the ones the slot has seen.
		state = map[string]tableState{}
		for _, t := range s.tables {
			var in bool
			if err := s.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication p WHERE p.pubname = $1 AND (p.puballtables OR EXISTS (SELECT 1 FROM pg_publication_rel r WHERE r.prpubid = p.oid AND r.prrelid = $2)))`, s.cfg.Publication.Name, t.oid).Scan(&in); err != nil {
				return s.errorf("look up the publication's tables: %s", err)
			}
			if in {
				state[t.ident] = tableState{Done: true}
			}
		}
	}
	changed := !ok
	a := &adder{s: s, state: state, byID: map[string]*sourceTable{}, windows: map[string]*replayed{}}
	for _, t := range s.tables {
		a.byID[t.ident] = t
		st, known := state[t.ident]
		if !known {
			state[t.ident] = tableState{}
			changed = true
			sdk.Logger(ctx).Info(fmt.Sprintf("postgres: table %s was added to parameter \"tables\": it is snapshotted in chunks while changes stream", t.ident), "table", t.ident)
		}
		if !st.Done {
			a.todo = append(a.todo, t)
		}
	}
	// A table no longer read is forgotten: its changes are not read
	// meanwhile, so if it comes back it is snapshotted again.
	for ident := range state {
		if a.byID[ident] == nil {
			delete(state, ident)
			changed = true
		}
	}
	if changed {
		saved, err := s.saveTableStates(ctx, s.conn, state)
		if err != nil {
			return err
		}
		if !saved {
			return nil
		}
	}
	s.adder = a
	return nil
}

// startAdding decides, once the slot is known, whether added tables are to
// be read or chunks replayed; if so, replication starts at the slot's
// confirmed LSN (held there until the replay is acknowledged) and a start
// marker ends the replay.
func (s *Source) startAdding(ctx context.Context, confirmed pglogrepl.LSN) error {
	a := s.adder
	if a == nil {
		return nil
	}
	replay := false
	for _, st := range a.state {
		if low, err := pglogrepl.ParseLSN(st.Low); err == nil && st.Done && low >= confirmed {
			replay = true
		}
	}
	if len(a.todo) == 0 && !replay {
		s.adder = nil
		return nil
	}
	if err := a.exportSeen(ctx); err != nil {
		return err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	a.run = hex.EncodeToString(id[:])
	s.start = 0
	a.replayPin = &pin{lsn: uint64(confirmed), release: math.MaxInt64}
	a.pins = []*pin{a.replayPin}
	if err := a.emit(ctx, s.conn, watermark{Kind: "start"}); err != nil {
		return err
	}
	return nil
}

// exportSeen finds, for each added table without one, which transactions
// a snapshot exported now sees. The table is in the publication: a
// transaction the snapshot does not see commits after it was added, and its
// changes stream. One that commits between the table's addition and the
// snapshot's consistent point is seen and streams: the stream, which
// starts before the table was added, notes it (early) until the start
// marker, where both are recorded. Until then the slot is held where it
// was at Open, so a restart before finds them again.
func (a *adder) exportSeen(ctx context.Context) error {
	s := a.s
	var missing []string
	for _, t := range a.todo {
		if a.state[t.ident].Seen == "" {
			missing = append(missing, t.ident)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	tmp := addedSnapshotSlot(s.cfg.Slot.Name)
	created, err := pglogrepl.CreateReplicationSlot(ctx, s.repl, tmp, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, Temporary: true, SnapshotAction: "EXPORT_SNAPSHOT"})
	if err != nil {
		return s.errorf("create a temporary replication slot to snapshot the added tables: %s", err)
	}
	if err := s.beginSnapshot(ctx, created.SnapshotName); err != nil {
		return err
	}
	_, view, err := s.snapshotView(ctx)
	if err != nil {
		return err
	}
	if err := s.commit(ctx); err != nil {
		return err
	}
	if err := pglogrepl.DropReplicationSlot(ctx, s.repl, tmp, pglogrepl.DropReplicationSlotOptions{}); err != nil {
		return s.errorf("drop the temporary replication slot: %s", err)
	}
	a.view, a.early = view, map[string]map[uint32]bool{}
	a.consistent, _ = pglogrepl.ParseLSN(created.ConsistentPoint)
	for _, ident := range missing {
		a.early[ident] = map[uint32]bool{}
	}
	return nil
}

// recordSeen records, at the start marker, the exported snapshot and the
// early transactions of the tables that had none.
func (a *adder) recordSeen(ctx context.Context) error {
	if a.early == nil {
		return nil
	}
	for ident, xids := range a.early {
		st := a.state[ident]
		st.Seen, st.Early = a.view, slices.Sorted(maps.Keys(xids))
		a.state[ident] = st
	}
	a.early = nil
	_, err := a.s.saveTableStates(ctx, a.s.conn, a.state)
	return err
}

// addedSnapshotSlot names the temporary slot that exports the snapshot of
// the added tables.
func addedSnapshotSlot(slot string) string {
	const suffix = "_added"
	return slot[:min(len(slot), 63-len(suffix))] + suffix
}

// capped is lsn, or less if a chunk whose rows are not all acknowledged
// needs the slot to stay before it.
func (s *Source) capped(lsn uint64) uint64 {
	a := s.adder
	if a == nil {
		return lsn
	}
	acked := s.acked.Load()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pins = slices.DeleteFunc(a.pins, func(h *pin) bool { return h.release <= acked })
	for _, h := range a.pins {
		lsn = min(lsn, h.lsn)
	}
	return lsn
}

// pinSlot keeps the slot at its confirmed LSN from now on, until released.
func (a *adder) pinSlot() *pin {
	h := &pin{lsn: a.s.confirmed.Load(), release: math.MaxInt64}
	a.mu.Lock()
	a.pins = append(a.pins, h)
	a.mu.Unlock()
	return h
}

// releaseAfterQueued releases h once every record queued so far is
// acknowledged.
func (a *adder) releaseAfterQueued(h *pin) {
	a.mu.Lock()
	h.release = a.s.produced.Load()
	a.mu.Unlock()
}

// emit writes a watermark of this run on conn and returns its LSN.
func (a *adder) emit(ctx context.Context, conn *pgx.Conn, w watermark) error {
	_, err := a.emitLSN(ctx, conn, w)
	return err
}

func (a *adder) emitLSN(ctx context.Context, conn *pgx.Conn, w watermark) (pglogrepl.LSN, error) {
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
	switch m := msg.(type) {
	case *pglogrepl.BeginMessage:
		a.xid = m.Xid
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
	if early := a.early[rel.table.ident]; early != nil && r.lsn < a.consistent {
		early[a.xid] = true
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

// watermark handles one of the slot's watermarks.
func (a *adder) watermark(ctx context.Context, r *replicator, w watermark) error {
	id := w.Run + "/" + strconv.Itoa(w.Seq)
	switch {
	case w.Kind == "start" && w.Run == a.run:
		a.started, a.windows = true, map[string]*replayed{} // a window left open was never closed
		if err := a.recordSeen(ctx); err != nil {
			return err
		}
		if err := r.queuePending(ctx); err != nil {
			return err
		}
		a.releaseAfterQueued(a.replayPin)
		if a.s.measured && len(a.todo) > 0 {
			a.progress = a.estimate(ctx)
		}
		return a.next(ctx)
	case w.Run == a.run:
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
		var recs []sdk.Record
		for _, row := range c.rows {
			if !c.dropped[row.name] {
				recs = append(recs, a.record(row, r.lsn))
			}
		}
		a.live = nil
		if err := a.queue(ctx, r, recs); err != nil {
			return err
		}
		a.releaseAfterQueued(c.pin)
		if c.done {
			a.progress.tableDone(a.finished)
			a.todo = a.todo[1:]
			a.finished++
		}
		return a.next(ctx)
	case w.Kind == "low":
		if t := a.byID[w.Table]; t != nil && !a.started {
			a.windows[id] = &replayed{table: t, dropped: map[string]bool{}}
		}
	case w.Kind == "high":
		win := a.windows[id]
		if win == nil {
			return nil // its low watermark is before the slot's confirmed LSN: the chunk was acknowledged
		}
		delete(a.windows, id)
		if err := r.queuePending(ctx); err != nil {
			return err
		}
		return a.replay(ctx, r, win, w)
	}
	return nil
}

// replay emits again, at its high watermark, the rows of a chunk of an
// earlier run that are not acknowledged: the rows of its range whose
// version its snapshot saw and no change in its window replaced.
func (a *adder) replay(ctx context.Context, r *replicator, win *replayed, w watermark) error {
	if w.Last == nil {
		return nil
	}
	skip := a.s.skip
	if skip.LSN != "" && r.lsn < skip.lsn() {
		return nil // acknowledged
	}
	snap, err := parseTxSnapshot(w.Snap)
	if err != nil {
		return fmt.Errorf("watermark of table %s: %w", w.Table, err)
	}
	after := w.After
	if skip.added() && skip.lsn() == r.lsn && skip.Table == w.Table {
		after = skip.Key // the rows up to this one are acknowledged
	}
	if err := a.s.begin(ctx); err != nil {
		return err
	}
	fresh, _, err := a.s.snapshotView(ctx)
	if err != nil {
		return err
	}
	seen, err := a.seen(win.table)
	if err != nil {
		return err
	}
	rows, _, _, err := a.s.readRange(ctx, win.table, after, w.Last, 0, func(xmin uint32) bool {
		return snap.saw(xmin, fresh.xmax) && seen(xmin, fresh.xmax)
	})
	if err != nil {
		return err
	}
	if err := a.s.commit(ctx); err != nil {
		return err
	}
	var recs []sdk.Record
	for _, row := range rows {
		if !win.dropped[row.name] {
			recs = append(recs, a.record(row, r.lsn))
		}
	}
	return a.queue(ctx, r, recs)
}

// record is row's snapshot record, emitted at the high watermark that
// commits at lsn.
func (a *adder) record(row chunkRow, lsn pglogrepl.LSN) sdk.Record {
	rec := row.rec
	rec.Position = position{Table: row.table, Key: row.key, Version: row.version, LSN: lsn.String()}.bytes()
	return rec
}

// queue hands chunk records to Conduit, keeping the replication
// connection alive while the queue is full.
func (a *adder) queue(ctx context.Context, r *replicator, recs []sdk.Record) error {
	if len(recs) == 0 {
		return nil
	}
	a.s.produced.Add(int64(len(recs)))
	return a.s.q.put(ctx, recs, a.s.statusInterval, func() error { return r.status(ctx) })
}

// next reads the next chunk of the first table not done, between its
// watermarks, and records in the high watermark's transaction where the
// table's snapshot stands.
func (a *adder) next(ctx context.Context) error {
	if len(a.todo) == 0 {
		return nil
	}
	s, t := a.s, a.todo[0]
	a.seq++
	c := &liveChunk{seq: a.seq, table: t, dropped: map[string]bool{}, pin: a.pinSlot()}
	after := a.state[t.ident].After
	low, err := a.emitLSN(ctx, s.conn, watermark{Kind: "low", Seq: c.seq, Table: t.ident, After: after})
	if err != nil {
		return err
	}
	c.low = low
	if err := s.begin(ctx); err != nil {
		return err
	}
	var view string
	if c.snap, view, err = s.snapshotView(ctx); err != nil {
		return err
	}
	seen, err := a.seen(t)
	if err != nil {
		return err
	}
	var read int
	if c.rows, read, c.last, err = s.readRange(ctx, t, after, nil, s.cfg.Snapshot.FetchSize, func(xmin uint32) bool { return seen(xmin, c.snap.xmax) }); err != nil {
		return err
	}
	if err := s.commit(ctx); err != nil {
		return err
	}
	a.progress.readRows(a.finished, read)
	c.done = read < s.cfg.Snapshot.FetchSize
	st := a.state[t.ident]
	st.Done = c.done
	if c.last != nil {
		st.After = c.last
	}
	if c.done {
		st.After, st.Low = nil, low.String()
	}
	a.state[t.ident] = st
	a.live = c
	tx, err := s.conn.Begin(ctx)
	if err != nil {
		return s.errorf("begin a high watermark's transaction: %s", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := s.saveTableStates(ctx, tx.Conn(), a.state); err != nil {
		return err
	}
	if err := a.emit(ctx, tx.Conn(), watermark{Kind: "high", Seq: c.seq, Table: t.ident, After: after, Last: c.last, Snap: view, Done: c.done}); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return s.errorf("commit a high watermark: %s", err)
	}
	return nil
}

// seen returns whether a chunk of t may emit a row version: whether
// the snapshot exported after t was added saw it, and its transaction is
// not among the early ones, whose changes stream. horizon is the xmax of
// the snapshot the row is read under.
func (a *adder) seen(t *sourceTable) (func(xmin uint32, horizon uint64) bool, error) {
	st := a.state[t.ident]
	if st.Seen == "" {
		return func(uint32, uint64) bool { return true }, nil
	}
	snap, err := parseTxSnapshot(st.Seen)
	if err != nil {
		return nil, fmt.Errorf(`parameter "snapshot.stateTable": the added table %s: %w`, t.ident, err)
	}
	return func(xmin uint32, horizon uint64) bool {
		_, early := slices.BinarySearch(st.Early, xmin)
		return !early && snap.saw(xmin, horizon)
	}, nil
}

// fillUnread completes an emitted update of an added table not yet read
// whole that leaves a TOASTed value unchanged (so that pgoutput does not
// send it): the chunks leave out the row versions whose changes stream, so
// the destination may never get the value otherwise. It is read from the
// table as it is now; a later change that sets it comes after.
func (a *adder) fillUnread(ctx context.Context, rel *relation, updated *pglogrepl.TupleData, after sdk.StructuredData, emitted bool) error {
	if a == nil || !emitted || !slices.Contains(a.todo, rel.table) {
		return nil
	}
	var missing []string
	for i, c := range updated.Columns {
		if c.DataType == pglogrepl.TupleDataTypeToast && i < len(rel.names) {
			missing = append(missing, rel.names[i])
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return a.s.readColumns(ctx, rel, rel.keyText(updated), missing, after)
}

// begin starts a repeatable read transaction to read a chunk in.
func (s *Source) begin(ctx context.Context) error {
	if _, err := s.conn.Exec(ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`); err != nil {
		return s.errorf("begin a chunk's transaction: %s", err)
	}
	return nil
}

func (s *Source) commit(ctx context.Context) error {
	if _, err := s.conn.Exec(ctx, `COMMIT`); err != nil {
		return s.errorf("end a chunk's transaction: %s", err)
	}
	return nil
}

// sees reports whether the snapshot sees the committed transaction x, a
// 32-bit ID of a transaction decoded about now (within 2^31 of xmax).
func (snap txSnapshot) sees(x uint32) bool {
	d := int32(x - uint32(snap.xmax))
	if d >= 0 {
		return false
	}
	full := int64(snap.xmax) + int64(d)
	if full < int64(snap.xmin) {
		return true
	}
	_, running := slices.BinarySearch(snap.xip, uint64(full))
	return !running
}

// estimate starts following the added tables' snapshot, one index per
// table not done.
func (a *adder) estimate(ctx context.Context) *snapshotProgress {
	p := &snapshotProgress{m: a.s.metrics}
	for _, t := range a.todo {
		p.tables = append(p.tables, t.schema+"."+t.name)
		var rows float64
		var out []byte
		var plan []struct {
			Plan struct {
				Rows float64 `json:"Plan Rows"`
			}
		}
		if err := a.s.conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) SELECT 1 FROM "+t.ident).Scan(&out); err == nil && json.Unmarshal(out, &plan) == nil && len(plan) == 1 {
			rows = plan[0].Plan.Rows
		}
		p.estimates = append(p.estimates, rows)
		p.read = append(p.read, 0)
		p.m.snapshotEstimate.Set(rows, p.tables[len(p.tables)-1])
	}
	p.remaining = len(a.todo)
	p.m.snapshotRemaining.Set(float64(p.remaining))
	p.show()
	return p
}

// loadTableStates returns the `tables` column of the slot's state row;
// false when there is no row, no such column or it is NULL.
func (s *Source) loadTableStates(ctx context.Context) (map[string]tableState, bool, error) {
	var raw []byte
	err := s.conn.QueryRow(ctx, `SELECT tables FROM `+s.stateIdent+` WHERE slot = $1`, s.cfg.Slot.Name).Scan(&raw)
	var pgErr *pgconn.PgError
	if errors.Is(err, pgx.ErrNoRows) || undefinedTable(err) || errors.As(err, &pgErr) && pgErr.Code == "42703" {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.errorf(`parameter "snapshot.stateTable": read the slot's tables: %s`, err)
	}
	if raw == nil {
		return nil, false, nil
	}
	var state map[string]tableState
	if err := json.Unmarshal(raw, &state); err != nil {
		return nil, false, fmt.Errorf(`parameter "snapshot.stateTable": the tables of slot %s: %w`, s.cfg.Slot.Name, err)
	}
	return state, true, nil
}

// saveTableStates writes the `tables` column of the slot's state row on
// conn, creating the table, the column or the row when missing. When the
// role may not, it logs why and returns false: added tables are then not
// snapshotted, only streamed.
func (s *Source) saveTableStates(ctx context.Context, conn *pgx.Conn, state map[string]tableState) (bool, error) {
	raw, _ := json.Marshal(state)
	var exists, column bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'tables' AND NOT attisdropped)`, s.stateIdent).Scan(&exists, &column); err != nil {
		return false, s.errorf(`parameter "snapshot.stateTable": look up the table: %s`, err)
	}
	var err error
	switch {
	case !exists:
		_, err = conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.stateIdent+` (
			slot text PRIMARY KEY,
			snapshot text NOT NULL,
			taken timestamptz NOT NULL DEFAULT now(),
			tables jsonb)`)
	case !column:
		_, err = conn.Exec(ctx, `ALTER TABLE `+s.stateIdent+` ADD COLUMN IF NOT EXISTS tables jsonb`)
	}
	if err == nil {
		_, err = conn.Exec(ctx, `INSERT INTO `+s.stateIdent+` (slot, snapshot, tables) VALUES ($1, txid_current_snapshot()::text, $2)
			ON CONFLICT (slot) DO UPDATE SET tables = excluded.tables`, s.cfg.Slot.Name, string(raw))
	}
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42501" {
		sdk.Logger(ctx).Warn(fmt.Sprintf(`postgres: parameter "snapshot.stateTable": may not write table %s (%s): tables added to parameter "tables" are not snapshotted, only their changes stream; grant the role CREATE on the table's schema (or ownership of the table), or name a table it may create`, s.stateIdent, pgErr.Message))
		return false, nil
	}
	if err != nil {
		return false, s.errorf(`parameter "snapshot.stateTable": record the slot's tables: %s`, err)
	}
	return true, nil
}

// recordTables records that the first snapshot covers every table, unless
// the state table could not be created (saveFirstSnapshot has said why).
func (s *Source) recordTables(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.cfg.URL)
	if err != nil {
		return s.errorf("connect to PostgreSQL to record the snapshot's tables: %s", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.stateIdent).Scan(&exists); err != nil || !exists {
		return nil
	}
	state := map[string]tableState{}
	for _, t := range s.tables {
		state[t.ident] = tableState{Done: true}
	}
	_, err = s.saveTableStates(ctx, conn, state)
	return err
}
