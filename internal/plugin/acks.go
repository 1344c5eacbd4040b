package plugin

import (
	"fmt"

	"github.com/conduitio/conduit-commons/opencdc"
)

// judge judges the outcome of a Destination.Write of size records that
// returned n and err: how many leading records it confirms, acked is
// their count, and the error the others are nacked with, nil if there are
// none.
//
// A Write that breaks its contract is treated conservatively: n outside
// [0, size] confirms nothing, and a short write without an error gets an
// error that says so. Both are reported so the connector's author can find
// the bug. n == size with an error confirms everything: the records were
// written, and the returned error is the caller's to log.
func judge(size, n int, err error) (acked int, nackErr error) {
	switch {
	case n < 0 || n > size:
		nackErr = fmt.Errorf("destination broke the Write contract: returned n=%d for %d records, expected 0 <= n <= %d", n, size, size)
		if err != nil {
			nackErr = fmt.Errorf("%w (Write error: %w)", nackErr, err)
		}
		return 0, nackErr
	case n < size && err == nil:
		return n, fmt.Errorf("destination broke the Write contract: wrote %d of %d records but returned no error", n, size)
	case n < size:
		return n, err
	}
	return n, nil
}

// positionsOf returns the records' positions.
func positionsOf(records []opencdc.Record) []opencdc.Position {
	positions := make([]opencdc.Position, len(records))
	for i, r := range records {
		positions[i] = r.Position
	}
	return positions
}
