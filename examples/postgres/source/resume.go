package source

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
)

// resumed is a snapshot resumed after a restart, under a fresh snapshot
// exported by a temporary slot (export.go). The fresh snapshot reads only
// the row versions the first snapshot saw (first): the rows unchanged
// since, each under the position the first snapshot gave it. Every other
// version is written by a transaction that replication, which starts where
// the first snapshot ended, streams anyway, under the positions it
// streamed them under before the restart. A row changed before the fresh
// snapshot, after the resume point, thus comes as its changes alone.
type resumed struct {
	table string        // the table and key of the last row acknowledged
	key   []string      // under the first snapshot
	until pglogrepl.LSN // the fresh snapshot's consistent point

	first   txSnapshot
	horizon uint64          // the fresh snapshot's xmax
	changed map[string]bool // rows changed before until, by rowName
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
	firstChange := !res.changed[oldKey]
	res.changed[oldKey], res.changed[rowName(rel, updated)] = true, true
	missing := rel.unchangedToast(updated)
	if !firstChange || !emitted || len(missing) == 0 || rel.table.keyless() { // a keyless table's old row filled them
		return nil
	}
	if covered, err := r.s.coveredByResume(ctx, rel, old); err != nil || !covered {
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

// coveredByResume reports whether the resumed snapshot covers the row of
// rel whose tuple is t: a row of a table after the resume table, or of the
// resume table with a key after the resume key (compared by the server, as
// the snapshot's query did). A tuple without its key's values (an
// unchanged TOASTed key) counts as not covered.
func (s *Source) coveredByResume(ctx context.Context, rel *relation, t *pglogrepl.TupleData) (bool, error) {
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
