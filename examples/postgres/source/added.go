package source

import (
	"context"
	"fmt"
	"slices"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
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
//   - Each row version comes once, from the chunks or from the stream.
//     A snapshot exported by a temporary slot right after the table joined
//     the publication splits them at its consistent point: a row version
//     it did not see is left out of every chunk, its change streams; the
//     changes of a transaction that commits before that point are left
//     out of the stream, and the chunks carry what it wrote
//     (tableState.Seen, tableState.Consistent). Such a transaction may
//     have begun before the table joined, and the stream then has only the
//     changes it made after.
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

// adder snapshots the added tables from the reader's goroutine, the
// stream's messages its events: it sees each before the replicator does
// (observe), and each watermark has a method of its own (watermark.go).
type adder struct {
	s     *Source
	run   string                  // this Open's ID, which its watermarks carry
	state map[string]tableState   // the state row's tables, by table ident (statetable.go)
	todo  []*sourceTable          // added tables not done, in name order
	byID  map[string]*sourceTable // the tables read, by ident

	// Where the stream is among the watermarks.
	started bool                 // the start marker has come: the replay is over
	seq     int                  // the last chunk started
	live    *liveChunk           // read, not yet emitted (chunk.go)
	windows map[string]*replayed // chunks of earlier runs whose low watermark the stream passed, by chunkID (replay.go)
	xid     uint32               // the transaction being decoded

	exported  map[*sourceTable]pglogrepl.LSN // the consistent point of each table's Seen snapshot, whose chunks carry the changes before it
	progress  *snapshotProgress              // index i follows todo[i] as it was at the start marker
	finished  int                            // tables done since the start marker
	pins      pins                           // where chunks not all acknowledged keep the slot (pin.go)
	replayPin *pin                           // keeps the slot where it was at Open until the replay is acknowledged
}

// planAddedTables finds, before the publication is changed, the tables a
// source restarted from a change's position has not snapshotted, and
// records them in the state row. The snapshot of the added tables starts in
// startAdding.
func (s *Source) planAddedTables(ctx context.Context, from sdk.Position, pos position) error {
	if mode := s.cfg.Snapshot.Mode; from == nil || pos.snapshot() || mode != "initial" && mode != "when_needed" {
		return nil
	}
	state, ok, err := s.loadTableStates(ctx)
	if err != nil {
		return err
	}
	if !ok {
		// A row written before the tables were recorded: the tables the
		// publication has are the ones the slot has seen.
		if state, err = s.publishedTables(ctx); err != nil {
			return err
		}
	}
	a := &adder{s: s, state: state, byID: map[string]*sourceTable{}, windows: map[string]*replayed{}}
	changed, err := a.followTables(ctx)
	if err != nil {
		return err
	}
	if changed || !ok {
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

// followTables adds to the state the tables read that it lacks, and to
// todo those not done, and forgets the tables no longer read: their
// changes are not read meanwhile, so if one comes back it is snapshotted
// again. It reports whether the state changed. A keyless table cannot be
// added: its chunks could not be matched against the changes that stream
// meanwhile (keyless.go).
func (a *adder) followTables(ctx context.Context) (bool, error) {
	changed := false
	for _, t := range a.s.catalog.tables {
		a.byID[t.ident] = t
		st, known := a.state[t.ident]
		if !known && t.keyless() {
			return false, addedKeyless(t)
		}
		if !known {
			a.state[t.ident] = tableState{}
			changed = true
			sdk.Logger(ctx).Info(fmt.Sprintf("postgres: table %s was added to parameter \"tables\": it is snapshotted in chunks while changes stream", t.ident), "table", t.ident)
		}
		if !st.Done {
			a.todo = append(a.todo, t)
		}
	}
	for ident := range a.state {
		if a.byID[ident] == nil {
			delete(a.state, ident)
			changed = true
		}
	}
	return changed, nil
}

// publishedTables is the state of a slot whose row does not list its
// tables: the tables read that the publication has, each done.
func (s *Source) publishedTables(ctx context.Context) (map[string]tableState, error) {
	state := map[string]tableState{}
	for _, t := range s.catalog.tables {
		var in bool
		if err := s.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication p WHERE p.pubname = $1 AND (p.puballtables OR EXISTS (SELECT 1 FROM pg_publication_rel r WHERE r.prpubid = p.oid AND r.prrelid = $2)))`, s.cfg.Publication.Name, t.oid).Scan(&in); err != nil {
			return nil, s.errorf("look up the publication's tables: %s", err)
		}
		if in {
			state[t.ident] = tableState{Done: true}
		}
	}
	return state, nil
}

// startAdding decides, once the slot is known, whether added tables are to
// be read or chunks replayed; if so, replication starts at the slot's
// confirmed LSN (pinned there until the replay is acknowledged) and a start
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
	if err := a.noteExported(); err != nil {
		return err
	}
	a.run = newRunID()
	s.from.lsn = 0
	a.replayPin = a.pins.add(uint64(confirmed))
	_, err := a.writeWatermark(ctx, s.conn, watermark{Kind: "start"})
	return err
}

// exportSeen exports, for the added tables without one, a snapshot that
// sees what was written before it and not after: the table is in the
// publication, so a transaction the snapshot does not see commits after
// it was added, and its changes stream. The stream leaves out the changes
// of the transactions the snapshot saw, whose row versions the chunks
// carry: one in flight while the table was added streams only part of
// what it wrote (the changes made before the table was added are not
// published). Both are saved at once, so that a restart keeps them.
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
	exported, err := s.exportSnapshot(ctx, tempSlotName(s.cfg.Slot.Name, "_added"), "snapshot the added tables")
	if err != nil {
		return err
	}
	if err := s.endChunkTx(ctx); err != nil {
		return err
	}
	for _, ident := range missing {
		st := a.state[ident]
		st.Seen, st.Consistent = exported.view, exported.consistent.String()
		a.state[ident] = st
	}
	_, err = s.saveTableStates(ctx, s.conn, a.state)
	return err
}

// noteExported reads from the state the consistent points of the added
// tables' snapshots, once startAdding has them all, before anything
// streams.
func (a *adder) noteExported() error {
	a.exported = map[*sourceTable]pglogrepl.LSN{}
	for ident, st := range a.state {
		t := a.byID[ident]
		if t == nil || st.Consistent == "" {
			continue
		}
		lsn, err := pglogrepl.ParseLSN(st.Consistent)
		if err != nil {
			return fmt.Errorf(`parameter "snapshot.stateTable": the added table %s: consistent point %q: %w`, ident, st.Consistent, err)
		}
		a.exported[t] = lsn
	}
	return nil
}

// chunked reports whether a change to t by the transaction that commits at
// commit is one that t's chunks carry instead of the stream: the snapshot
// they are read against saw it.
func (a *adder) chunked(t *sourceTable, commit pglogrepl.LSN) bool {
	if a == nil {
		return false
	}
	consistent, ok := a.exported[t]
	return ok && commit < consistent
}

// seen returns whether a chunk of t may emit a row version: whether
// the snapshot exported after t was added saw it (and, in a state saved
// before the stream left such changes out, its transaction is not among
// the early ones, whose changes streamed). horizon is the xmax of the
// snapshot the row is read under.
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
	if a == nil || !emitted || !slices.Contains(a.todo, rel.table) || rel.table.keyless() {
		return nil
	}
	missing := rel.unchangedToast(updated)
	if len(missing) == 0 {
		return nil
	}
	return a.s.readColumns(ctx, rel, rel.keyText(updated), missing, after)
}
