package plugin

import (
	"fmt"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
)

// settle turns the outcome of Destination.Write into one ack per record, in
// order: records[:n] positively, records[n:] negatively with the error.
//
// A Write that breaks its contract is treated conservatively: n outside
// [0, len(records)] confirms nothing, and a short write without an error
// gets an error that says so. Both are reported so the connector's author
// can find the bug. n == len(records) with an error acks everything: the
// records were written, and the returned error is the caller's to log.
// acked is how many leading records the acks confirm.
func settle(records []opencdc.Record, n int, err error) (acks []pconnector.DestinationRunResponseAck, acked int, nackErr error) {
	switch {
	case n < 0 || n > len(records):
		nackErr = fmt.Errorf("destination broke the Write contract: returned n=%d for %d records, expected 0 <= n <= %d", n, len(records), len(records))
		if err != nil {
			nackErr = fmt.Errorf("%w (Write error: %w)", nackErr, err)
		}
		n = 0
	case n < len(records) && err == nil:
		nackErr = fmt.Errorf("destination broke the Write contract: wrote %d of %d records but returned no error", n, len(records))
	case n < len(records):
		nackErr = err
	}
	msg := ""
	if nackErr != nil {
		// An empty error string would read as a positive ack to Conduit.
		if msg = nackErr.Error(); msg == "" {
			msg = fmt.Sprintf("destination returned an error with an empty message (%T)", nackErr)
		}
	}
	acks = make([]pconnector.DestinationRunResponseAck, len(records))
	for i, r := range records {
		acks[i].Position = r.Position
		if i >= n {
			acks[i].Error = msg
		}
	}
	return acks, n, nackErr
}
