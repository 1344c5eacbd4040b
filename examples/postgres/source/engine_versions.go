package source

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
)

// Which row versions a table's chunks carry, and which the stream does:
// each comes once. A snapshot taken when the table's read begins (its
// Seen) splits them. A row version it did not see was written by a
// transaction that commits after it, whose changes stream: every chunk
// leaves it out. A transaction it saw commits before its consistent point
// (Consistent): the chunks carry what it wrote, and the stream leaves its
// changes to the table out (chunked). For the first copy, Seen is the
// snapshot the slot exported, where the stream starts, so nothing is left
// out of the stream. For a table added while streaming, it is exported
// right after the table joined the publication; a transaction in flight
// then streams only the changes it made after, so its changes before are
// left out as well.

// txSnapshot is which transactions a snapshot sees, as txid_snapshot's
// text writes it ("xmin:xmax:xip,..." in full, epoch-qualified IDs): those
// before xmax, except the ones in xip.
type txSnapshot struct {
	xmin, xmax uint64
	xip        []uint64 // sorted
}

// parseTxSnapshot reads a txid_snapshot's text.
func parseTxSnapshot(s string) (txSnapshot, error) {
	var snap txSnapshot
	fields := strings.Split(s, ":")
	if len(fields) != 3 {
		return snap, fmt.Errorf("snapshot %q: expected xmin:xmax:xip", s)
	}
	var err error
	if snap.xmin, err = strconv.ParseUint(fields[0], 10, 64); err != nil {
		return snap, fmt.Errorf("snapshot %q: xmin: %w", s, err)
	}
	if snap.xmax, err = strconv.ParseUint(fields[1], 10, 64); err != nil {
		return snap, fmt.Errorf("snapshot %q: xmax: %w", s, err)
	}
	if snap.xmax < snap.xmin {
		return snap, fmt.Errorf("snapshot %q: xmax before xmin", s)
	}
	if fields[2] != "" {
		for x := range strings.SplitSeq(fields[2], ",") {
			id, err := strconv.ParseUint(x, 10, 64)
			if err != nil {
				return snap, fmt.Errorf("snapshot %q: xip: %w", s, err)
			}
			snap.xip = append(snap.xip, id)
		}
		slices.Sort(snap.xip)
	}
	return snap, nil
}

// saw reports whether the snapshot saw the row version whose xmin is x,
// a 32-bit transaction ID read from a later snapshot whose xmax is
// horizon (every row version that snapshot reads was written before it).
// x is placed in the epoch that puts it within 2^32 before horizon; one
// before the snapshot's xmin was committed before it. Frozen and bootstrap
// IDs (below 3) are always seen. A version frozen since keeps its xmin, so
// one written after the snapshot is still told apart.
func (snap txSnapshot) saw(x uint32, horizon uint64) bool {
	if x < 3 {
		return true
	}
	full := snap.xmin + uint64(x-uint32(snap.xmin)) // x's ID if at or after xmin
	if full >= horizon {
		return true // not written since the snapshot's xmin: before it
	}
	if full >= snap.xmax {
		return false
	}
	_, running := slices.BinarySearch(snap.xip, full)
	return !running
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

// exportSeen exports, for the tables to read without a Seen snapshot (the
// added ones), a snapshot that sees what was written before it and not
// after: the table is in the publication, so a transaction the snapshot
// does not see commits after it was added, and its changes stream. Both
// are saved at once, so that a restart keeps them.
func (e *engine) exportSeen(ctx context.Context) error {
	var missing []string
	for _, t := range e.todo {
		if e.state[t.ident].Seen == "" {
			missing = append(missing, t.ident)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	s := e.src
	exported, err := s.exportSnapshot(ctx, tempSlotName(s.cfg.Slot.Name, "_added"), "snapshot the added tables")
	if err != nil {
		return err
	}
	for _, ident := range missing {
		st := e.state[ident]
		st.Seen, st.Consistent = exported.view, exported.consistent.String()
		e.state[ident] = st
	}
	return s.saveTableStates(ctx, s.conn, e.state)
}

// noteExported reads from the state the consistent points of the tables'
// Seen snapshots, once begin has them all, before anything streams.
func (e *engine) noteExported() error {
	for ident, st := range e.state {
		t := e.tables[ident]
		if t == nil || st.Consistent == "" {
			continue
		}
		lsn, err := pglogrepl.ParseLSN(st.Consistent)
		if err != nil {
			return fmt.Errorf(`parameter "snapshot.stateTable": table %s: consistent point %q: %w`, ident, st.Consistent, err)
		}
		e.exported[t] = lsn
	}
	return nil
}

// chunked reports whether a change to t by the transaction that commits at
// commit is one that t's chunks carry instead of the stream: the snapshot
// they are read against saw it.
func (e *engine) chunked(t *sourceTable, commit pglogrepl.LSN) bool {
	if e == nil {
		return false
	}
	consistent, ok := e.exported[t]
	return ok && commit < consistent
}

// seen returns whether a chunk of t may emit a row version: whether t's
// Seen snapshot saw it (and, in a state saved before the stream left such
// changes out, its transaction is not among the early ones, whose changes
// streamed); nil when every version may be (without changes to stream).
// horizon is the xmax of the snapshot the row is read under.
func (e *engine) seen(t *sourceTable) (func(xmin uint32, horizon uint64) bool, error) {
	st := e.state[t.ident]
	if st.Seen == "" {
		return nil, nil
	}
	snap, err := parseTxSnapshot(st.Seen)
	if err != nil {
		return nil, fmt.Errorf(`parameter "snapshot.stateTable": table %s: %w`, t.ident, err)
	}
	return func(xmin uint32, horizon uint64) bool {
		_, early := slices.BinarySearch(st.Early, xmin)
		return !early && snap.saw(xmin, horizon)
	}, nil
}

// fillUnread completes an emitted update of a table not yet read whole,
// or one streamed again while earlier runs' chunks are replayed, that
// leaves a TOASTed value unchanged (so that pgoutput does not send it):
// the chunks leave out the row versions whose changes stream, so the
// destination may never get the value otherwise. It is read from the
// table as it is now; a later change that sets it comes after. A keyless
// table's update has it from the old row.
func (e *engine) fillUnread(ctx context.Context, rel *relation, updated *pglogrepl.TupleData, after sdk.StructuredData, emitted bool) error {
	if e == nil || !emitted || e.started && !slices.Contains(e.todo, rel.table) || rel.table.keyless() {
		return nil
	}
	missing := rel.unchangedToast(updated)
	if len(missing) == 0 {
		return nil
	}
	return e.src.readColumns(ctx, rel, rel.keyText(updated), missing, after)
}
