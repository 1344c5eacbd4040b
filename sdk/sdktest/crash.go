package sdktest

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/internal/host"
)

// Crashes shapes a crash check: a run of Records records during which the
// plugin binary is killed with SIGKILL at each of the kill points At, with
// records in flight, sent and not acknowledged. After each kill the run
// goes on in a fresh plugin process from the last acknowledged record, as
// Conduit restarts a pipeline.
type Crashes struct {
	// Records is how many records the run has; default 300.
	Records int
	// At lists the kill points, increasing, each between 1 and Records-1;
	// default 2/15, 1/2 and 13/15 of Records (40, 150 and 260 of 300).
	// A destination is killed once the run's record At is sent and every
	// full batch before it is acknowledged: its records go in batches of
	// 16 that wait to fill (sdk.batch.size 16, sdk.batch.delay 1h), so the
	// records of a partial batch are in flight; without those settings,
	// the last 10 records sent. A source is killed once record At is
	// acknowledged, with the records it sent after it, 10 at least, in
	// flight.
	At []int
}

// crashInFlight is how many records a crash check keeps sent and not
// acknowledged at a kill, as a pipeline's acks trail its records.
const crashInFlight = 10

// points returns the kill points, with the defaults applied; it fails the
// check if they are not increasing record counts inside the run.
func (c *Crashes) points(t tb, suite string) []int {
	t.Helper()
	c.Records = cmp.Or(c.Records, 300)
	if c.Records < 2 {
		t.Fatalf("%s.Crash.Records = %d: the run needs at least 2 records, to kill the plugin between them", suite, c.Records)
	}
	at := c.At
	if len(at) == 0 {
		at = []int{max(1, c.Records*2/15), max(1, c.Records/2), max(1, c.Records*13/15)}
		at = slices.Compact(at)
	}
	for i, k := range at {
		if k < 1 || k >= c.Records || (i > 0 && k <= at[i-1]) {
			t.Fatalf("%s.Crash.At[%d] = %d: want increasing record counts between 1 and Crash.Records-1 (%d)", suite, i, k, c.Records-1)
		}
	}
	return at
}

// crashKill is what happened at one kill.
type crashKill struct {
	at    int              // the kill point
	acked int              // records of the run acknowledged before the kill
	again []opencdc.Record // sent before the kill, not acknowledged: sent again after it
}

// crash kills p with SIGKILL under the running instance i, which then is
// gone: no Stop, no Teardown. Before the Run stream is closed, collect
// takes what arrived on it until the kill.
func crash(t tb, p *host.Plugin, i *instance, collect func()) {
	t.Helper()
	i.torn = true
	defer i.stream.close()
	if err := p.Crash(); err != nil {
		t.Fatalf("%v", err)
	}
	collect()
}

// logKills reports in the test log what was due again after each kill,
// sent and not acknowledged before it: how many records, and their
// positions.
func logKills(t tb, kills []crashKill) {
	t.Helper()
	total := 0
	for _, k := range kills {
		total += len(k.again)
		t.Logf("kill -9 at record %d of the run, %d acknowledged: %d records sent and not acknowledged (or whose acknowledgement was lost) were due again after the restart%s",
			k.at, k.acked, len(k.again), listPositions(k.again))
	}
	t.Logf("%d kills, %d records due again in all", len(kills), total)
}

// listPositions lists the first positions of recs, after ": ".
func listPositions(recs []opencdc.Record) string {
	if len(recs) == 0 {
		return ""
	}
	ps := make([]string, len(recs))
	for i, r := range recs {
		ps[i] = fmt.Sprintf("%q", r.Position)
	}
	return ": " + firstOf(ps)
}

// drained waits for the Run stream of a killed plugin to end and returns
// how many of sent, in order, its acks acknowledged before it did; it
// fails the check on a nack or an ack out of order.
func (r *destinationRun) drained(t tb, ctx context.Context, sent []opencdc.Record) int {
	t.Helper()
	select {
	case <-r.done:
	case <-ctx.Done():
		t.Fatalf("the Run stream of the killed plugin did not end: %v", ctx.Err())
	}
	n := 0
	for {
		select {
		case a := <-r.acks:
			if n >= len(sent) || string(a.Position) != string(sent[n].Position) {
				t.Fatalf("ack for position %q where %s was expected: acks must come in the order records were sent", a.Position, expectedPosition(sent, n))
			}
			if a.Error != "" {
				t.Fatalf("the record at position %q was nacked: %s", a.Position, a.Error)
			}
			n++
		default:
			return n
		}
	}
}

func expectedPosition(recs []opencdc.Record, i int) string {
	if i >= len(recs) {
		return "none"
	}
	return fmt.Sprintf("%q", recs[i].Position)
}
