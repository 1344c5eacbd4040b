package plugin

import (
	"fmt"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
)

// settle turns the outcome of Destination.Write into one ack per record, in
// order: positions[:n] positively, positions[n:] negatively with the error.
// The positions are taken before Write, which may not change them but
// could.
//
// A Write that breaks its contract is treated conservatively: n outside
// [0, len(records)] confirms nothing, and a short write without an error
// gets an error that says so. Both are reported so the connector's author
// can find the bug. n == len(records) with an error acks everything: the
// records were written, and the returned error is the caller's to log.
// acked is how many leading records the acks confirm.
func settle(positions []opencdc.Position, n int, err error) (acks []pconnector.DestinationRunResponseAck, acked int, nackErr error) {
	switch {
	case n < 0 || n > len(positions):
		nackErr = fmt.Errorf("destination broke the Write contract: returned n=%d for %d records, expected 0 <= n <= %d", n, len(positions), len(positions))
		if err != nil {
			nackErr = fmt.Errorf("%w (Write error: %w)", nackErr, err)
		}
		n = 0
	case n < len(positions) && err == nil:
		nackErr = fmt.Errorf("destination broke the Write contract: wrote %d of %d records but returned no error", n, len(positions))
	case n < len(positions):
		nackErr = err
	}
	msg := ""
	if nackErr != nil {
		// An empty error string would read as a positive ack to Conduit.
		if msg = nackErr.Error(); msg == "" {
			msg = fmt.Sprintf("destination returned an error with an empty message (%T)", nackErr)
		}
	}
	acks = make([]pconnector.DestinationRunResponseAck, len(positions))
	for i, p := range positions {
		acks[i].Position = p
		if i >= n {
			acks[i].Error = msg
		}
	}
	return acks, n, nackErr
}

// positionsOf returns the records' positions.
func positionsOf(records []opencdc.Record) []opencdc.Position {
	positions := make([]opencdc.Position, len(records))
	for i, r := range records {
		positions[i] = r.Position
	}
	return positions
}
