package source

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// txSnapshot is which transactions a snapshot sees, as txid_snapshot's
// text writes it ("xmin:xmax:xip,..." in full, epoch-qualified IDs): those
// before xmax, except the ones in xip. The first snapshot's is kept in the
// source database (statetable.go), so that a resumed snapshot can tell the
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
