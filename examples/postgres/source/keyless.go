package source

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
)

// A keyless table (REPLICA IDENTITY FULL without a primary key,
// identity.go) has no order to read it in but its rows' places: it is read
// in ranges of blocks, `WHERE ctid > after AND ctid < '(end,0)'`, which
// PostgreSQL 14 and later answer with a TID range scan, reading those
// blocks alone. Each row's position names its ctid, so rows that are
// exact duplicates of each other are told apart, each arrives, and a
// snapshot resumed after a restart reads on after the last row
// acknowledged. A row version the first snapshot saw keeps its ctid until
// it is changed (then its new version streams) or the table is rewritten
// (VACUUM FULL, CLUSTER, some ALTER TABLEs), which a resumed snapshot does
// not survive exactly: rewritten rows may come twice or not at all.

// blockRange is a keyless table's range of blocks that one query reads:
// the rows after after (a ctid; "" from the first), before block end.
type blockRange struct {
	after string
	end   uint64
	done  bool // end is at or past the table's last block
}

// nextBlocks returns the range of t to read after the ctid after (nil:
// from the start): about fetchSize rows' worth of blocks, as the
// planner's statistics give rows per block (60 without).
func (s *Source) nextBlocks(ctx context.Context, t *sourceTable, after []string, fetchSize int) (blockRange, error) {
	var blocks uint64
	var perBlock float64
	err := s.conn.QueryRow(ctx, `SELECT pg_relation_size(c.oid) / current_setting('block_size')::bigint,
			CASE WHEN c.relpages > 0 AND c.reltuples > 0 THEN c.reltuples / c.relpages ELSE 0 END
		FROM pg_class c WHERE c.oid = $1`, t.oid).Scan(&blocks, &perBlock)
	if err != nil {
		return blockRange{}, s.errorf("read the size of table "+strings.ReplaceAll(t.ident, "%", "%%")+": %s", err)
	}
	if perBlock < 1 {
		perBlock = 60
	}
	// The rows a snapshot sees are in the blocks the table had when it was
	// first measured: blocks added since hold rows that stream.
	if s.keylessBlocks == nil {
		s.keylessBlocks = map[uint32]uint64{}
	}
	if first, ok := s.keylessBlocks[t.oid]; ok {
		blocks = min(blocks, first)
	}
	s.keylessBlocks[t.oid] = blocks
	r := blockRange{}
	var start uint64
	if len(after) == 1 {
		r.after = after[0]
		if start, err = parseTID(r.after); err != nil {
			return blockRange{}, err
		}
	}
	r.end = start + max(1, uint64(float64(fetchSize)/perBlock))
	r.done = r.end >= blocks
	return r, nil
}

// blockQuery is the query of readRange for a keyless table: the rows of
// the range r, or, with upto, those after after up to the ctid upto.
func (t *sourceTable) blockQuery(r blockRange, upto []string) (string, [][]byte) {
	cols := make([]string, len(t.columns))
	for i, c := range t.columns {
		cols[i] = pg.Quote(c)
	}
	var where []string
	var args [][]byte
	if r.after != "" {
		args = append(args, []byte(r.after))
		where = append(where, "ctid > $1::tid")
	}
	if upto != nil {
		args = append(args, []byte(upto[0]))
	} else {
		args = append(args, []byte(tid(r.end)))
	}
	op := "<"
	if upto != nil {
		op = "<="
	}
	where = append(where, fmt.Sprintf("ctid %s $%d::tid", op, len(args)))
	return fmt.Sprintf("SELECT %s, xmin, ctid FROM %s WHERE %s ORDER BY ctid", strings.Join(cols, ", "), t.rows(), strings.Join(where, " AND ")), args
}

// tid is the ctid before the first row of block b.
func tid(b uint64) string { return "(" + strconv.FormatUint(b, 10) + ",0)" }

// parseTID returns the block of a ctid's text, "(block,offset)".
func parseTID(s string) (uint64, error) {
	inner, ok := strings.CutPrefix(s, "(")
	if inner, ok2 := strings.CutSuffix(inner, ")"); ok && ok2 {
		if b, o, ok := strings.Cut(inner, ","); ok {
			block, err1 := strconv.ParseUint(b, 10, 32)
			_, err2 := strconv.ParseUint(o, 10, 16)
			if err1 == nil && err2 == nil {
				return block, nil
			}
		}
	}
	return 0, fmt.Errorf("ctid %q is not a row's place (block,offset)", s)
}

// addedKeyless is the error for a keyless table added to `tables` while
// the source streams. An added table is read in chunks while its changes
// stream, and a change in a chunk's window replaces the chunk's copy of
// its row (added.go): a keyless table has nothing that names the row, and
// matching rows by their values goes wrong with duplicates, so the source
// refuses rather than deliver a row twice or lose one.
func addedKeyless(t *sourceTable) error {
	name := pg.SQLName(t.schema, t.name)
	return fmt.Errorf(`parameter "tables": table %s has no key (REPLICA IDENTITY FULL without a primary key) and was added while the source streams: such a table is read in chunks whose rows are matched by key with the changes that stream meanwhile; give it a key (ALTER TABLE %s ADD PRIMARY KEY (...), or REPLICA IDENTITY USING INDEX on a unique index), or start the pipeline over (reset its position) so that the first snapshot reads it; the table was not added to the publication`, name, name)
}

// resumable checks that the snapshot position pos names its row the way
// its table is read now: by ctid if the table is keyless, by key if not.
// A primary key added or dropped, or a replica identity changed, since the
// snapshot began leaves no place in the table to resume at.
func (s *Source) resumable(pos position) error {
	for _, t := range s.catalog.tables {
		if t.ident != pos.Table || t.keyless() == (pos.CTID != "") {
			continue
		}
		was, is := "key", "keyless (REPLICA IDENTITY FULL without a primary key)"
		if !t.keyless() {
			was, is = "ctid", "keyed by "+strings.Join(t.keyNames(), ", ")
		}
		return fmt.Errorf("the snapshot cannot resume: its position names a row of table %s by its %s, but the table is now %s (its primary key or replica identity changed since the snapshot began); reset the pipeline's position (e.g. recreate the source connector) to take a new snapshot", pg.SQLName(t.schema, t.name), was, is)
	}
	return nil
}
