package source

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
)

// txSnapshot is which transactions a snapshot sees, as txid_snapshot's
// text writes it ("xmin:xmax:xip,..." in full, epoch-qualified IDs): those
// before xmax, except the ones in xip. The first snapshot's is kept in the
// source database (snapstate.go), so that a resumed snapshot can tell the
// row versions the first one read from those written since.
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

// resumed is a snapshot resumed after a restart, under a fresh snapshot
// exported by a temporary slot. The fresh snapshot reads only the row
// versions the first snapshot saw (first): the rows unchanged since, each
// under the position the first snapshot gave it. Every other version is
// written by a transaction that replication, which starts where the first
// snapshot ended, streams anyway, under the positions it streamed them
// under before the restart. A row changed before the fresh snapshot, after
// the resume point, thus comes as its changes alone.
type resumed struct {
	table string        // the table and key of the last row acknowledged
	key   []string      // under the first snapshot
	until pglogrepl.LSN // the fresh snapshot's consistent point

	first   txSnapshot
	horizon uint64          // the fresh snapshot's xmax
	changed map[string]bool // rows changed before until, by rowName
}

// freshSnapshotSlot names the temporary slot that exports a resumed
// snapshot: the slot's name with a suffix, within PostgreSQL's 63 bytes.
// The advisory lock on the slot's name keeps it to one source at a time.
func freshSnapshotSlot(slot string) string {
	const suffix = "_resume"
	return slot[:min(len(slot), 63-len(suffix))] + suffix
}

// snapshotView returns which transactions the snapshot of the current
// transaction sees.
func (s *Source) snapshotView(ctx context.Context) (txSnapshot, string, error) {
	var view string
	if err := s.conn.QueryRow(ctx, `SELECT txid_current_snapshot()::text`).Scan(&view); err != nil {
		return txSnapshot{}, "", s.errorf("read the snapshot's transactions: %s", err)
	}
	snap, err := parseTxSnapshot(view)
	return snap, view, err
}

// fillUnchanged completes an update streamed before a resumed snapshot's
// consistent point that leaves a TOASTed value unchanged (so that pgoutput
// does not send it), when it is the first change of a row after the
// resume point: the destination got no earlier version of that row from
// this run, so the values left out are read from the table as it is now.
// A later change that sets them comes after. Nothing is read for an update
// that is not emitted (acked before a restart).
func (r *replicator) fillUnchanged(ctx context.Context, rel *relation, old, updated *pglogrepl.TupleData, after sdk.StructuredData, emitted bool) error {
	res := r.s.resume
	if res == nil {
		return nil
	}
	oldKey := rowName(rel, old)
	first := !res.changed[oldKey]
	res.changed[oldKey], res.changed[rowName(rel, updated)] = true, true
	var missing []string
	for i, c := range updated.Columns {
		if c.DataType == pglogrepl.TupleDataTypeToast && i < len(rel.names) {
			missing = append(missing, rel.names[i])
		}
	}
	if !first || !emitted || len(missing) == 0 {
		return nil
	}
	if read, err := r.s.fresh(ctx, rel, old); err != nil || !read {
		return err
	}
	return r.s.readColumns(ctx, rel, rel.keyText(updated), missing, after)
}

// markChanged notes, before a resumed snapshot's consistent point, that a
// row had a change that carries all its values (an insert) or none (a
// delete), so that its later updates are not filled.
func (r *replicator) markChanged(rel *relation, t *pglogrepl.TupleData) {
	if res := r.s.resume; res != nil {
		res.changed[rowName(rel, t)] = true
	}
}

// rowName names the row of rel whose tuple is t, in resumed.changed.
func rowName(rel *relation, t *pglogrepl.TupleData) string {
	return rel.table.ident + "\x00" + strings.Join(rel.keyText(t), "\x00")
}

// readColumns reads the named columns of the row of rel whose key's text
// is key into d; nothing when the row is gone.
func (s *Source) readColumns(ctx context.Context, rel *relation, key []string, names []string, d sdk.StructuredData) error {
	tb := rel.table
	if key == nil {
		return nil
	}
	cols := make([]string, len(names))
	for i, n := range names {
		cols[i] = pg.Quote(n)
	}
	where := make([]string, len(tb.keys))
	args := make([][]byte, len(tb.keys))
	for i, k := range tb.keys {
		where[i] = pg.Quote(tb.columns[k]) + " = $" + strconv.Itoa(i+1) + "::text::" + tb.types[k]
		args[i] = []byte(key[i])
	}
	sql := fmt.Sprintf("SELECT %s FROM %s WHERE %s", strings.Join(cols, ", "), tb.ident, strings.Join(where, " AND "))
	rr := s.conn.PgConn().ExecParams(ctx, sql, args, nil, nil, nil)
	fields := rr.FieldDescriptions()
	for rr.NextRow() {
		for i, v := range rr.Values() {
			if v == nil {
				d[names[i]] = nil
				continue
			}
			d[names[i]] = value(fields[i].DataTypeOID, v)
		}
	}
	if _, err := rr.Close(); err != nil {
		return s.errorf("read the unchanged values of an update in "+strings.ReplaceAll(tb.ident, "%", "%%")+": %s", err)
	}
	return nil
}

// fresh reports whether the resumed snapshot covers the row of rel whose
// tuple is t: a row of a table after the resume table, or of the resume
// table with a key after the resume key (compared by the server, as the
// snapshot's query did). A tuple without its key's values (an unchanged
// TOASTed key) counts as not covered.
func (s *Source) fresh(ctx context.Context, rel *relation, t *pglogrepl.TupleData) (bool, error) {
	switch ident := rel.table.ident; {
	case ident < s.resume.table:
		return false, nil
	case ident > s.resume.table:
		return true, nil
	}
	key := rel.keyText(t)
	if key == nil {
		return false, nil
	}
	if s.resume.key == nil {
		return true, nil
	}
	tb := rel.table
	left := make([]string, len(tb.keys))
	right := make([]string, len(tb.keys))
	args := make([]any, 0, 2*len(tb.keys))
	for i, k := range tb.keys {
		left[i] = "$" + strconv.Itoa(i+1) + "::text::" + tb.types[k]
		right[i] = "$" + strconv.Itoa(len(tb.keys)+i+1) + "::text::" + tb.types[k]
	}
	for _, k := range key {
		args = append(args, k)
	}
	for _, k := range s.resume.key {
		args = append(args, k)
	}
	var after bool
	sql := fmt.Sprintf("SELECT ROW(%s) > ROW(%s)", strings.Join(left, ", "), strings.Join(right, ", "))
	if err := s.conn.QueryRow(ctx, sql, args...).Scan(&after); err != nil {
		return false, s.errorf("compare a change's key with the resumed snapshot's in "+strings.ReplaceAll(tb.ident, "%", "%%")+": %s", err)
	}
	return after, nil
}
