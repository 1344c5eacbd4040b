package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pglogrepl"
)

// resumed describes a snapshot that was resumed under a fresh snapshot:
// it took over at Table's Key (the last row acknowledged under the first
// snapshot) and sees every transaction that commits before Until, the
// consistent point of the temporary slot that exported it. Replication
// still starts where the first snapshot ended, so an insert or update
// that commits before Until to a row that the fresh snapshot read (a
// table after Table, or Table after Key) is already delivered, and is
// dropped; the others, and deletes, are kept (replicator.handle). Changes
// committing before Until carry it in their positions, so a restart among
// them drops the same changes.
type resumed struct {
	Table string   `json:"table"`
	Key   []string `json:"key,omitempty"`
	Until string   `json:"until"`
}

// until is the fresh snapshot's consistent point.
func (r *resumed) until() pglogrepl.LSN {
	l, _ := pglogrepl.ParseLSN(r.Until) // checked by parsePosition
	return l
}

// freshSnapshotSlot names the temporary slot that exports a resumed
// snapshot: the slot's name with a suffix, within PostgreSQL's 63 bytes.
// The advisory lock on the slot's name keeps it to one source at a time.
func freshSnapshotSlot(slot string) string {
	const suffix = "_resume"
	return slot[:min(len(slot), 63-len(suffix))] + suffix
}

// fresh reports whether the resumed snapshot read the row of rel whose
// tuple is t, as it was at the fresh snapshot's consistent point: a row of
// a table after the resume table, or of the resume table with a key after
// the resume key (compared by the server, as the snapshot's query did). A
// tuple without its key's values (an unchanged TOASTed key) counts as not
// read, so its change is kept rather than lost.
func (s *Source) fresh(ctx context.Context, rel *relation, t *pglogrepl.TupleData) (bool, error) {
	switch ident := rel.table.ident; {
	case ident < s.resume.Table:
		return false, nil
	case ident > s.resume.Table:
		return true, nil
	}
	key := rel.keyText(t)
	if key == nil {
		return false, nil
	}
	if s.resume.Key == nil {
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
	for _, k := range s.resume.Key {
		args = append(args, k)
	}
	var after bool
	sql := fmt.Sprintf("SELECT ROW(%s) > ROW(%s)", strings.Join(left, ", "), strings.Join(right, ", "))
	if err := s.conn.QueryRow(ctx, sql, args...).Scan(&after); err != nil {
		return false, s.errorf("compare a change's key with the resumed snapshot's in "+strings.ReplaceAll(tb.ident, "%", "%%")+": %s", err)
	}
	return after, nil
}
