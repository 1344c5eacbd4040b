package sdktest

import (
	"bytes"
	"context"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
)

// checkCrashRead reads a run of records from the plugin binary, kills it
// with SIGKILL at the suite's kill points and opens a fresh plugin process
// at the last acknowledged position, as Conduit does: the records that
// arrived after it before the kill must come again, first and in order,
// and none acknowledged before it.
func checkCrashRead(t tb, ctx context.Context, s SourceSuite, r outOfProcess) {
	at := s.Crash.points(t, "SourceSuite")
	var acked []opencdc.Record  // the run's acknowledged records, in order
	ackedAt := map[string]int{} // their positions, with the kill point they were acknowledged before
	var expect []opencdc.Record // sent before the last kill, not acknowledged: due again, first
	var from opencdc.Position   // the last acknowledged position
	var kills []crashKill
	replayed := 0 // records that came again as due
	for i, k := range append(at, s.Crash.Records) {
		last := i == len(at)
		p, c := r.launchSource(t)
		inst := openSourceClient(t, ctx, c, s.Config, from)
		run := inst.start(t, ctx)
		var window []opencdc.Record // arrived, not acknowledged
		for len(acked) < k {
			recs, err := run.next(ctx)
			if err != nil {
				t.Fatalf("reading record %d of the run (%d acknowledged) after Open(%q): %v%s", len(acked)+len(window)+1, len(acked), from, err, tooFew(err))
			}
			for _, rec := range recs {
				if j, ok := ackedAt[string(rec.Position)]; ok {
					t.Fatalf("after a kill -9 and Open(%q), the source delivered %q again, which was acknowledged before the kill at record %d: Open must resume right after the position it is given", from, rec.Position, j)
				}
				if len(expect) > 0 {
					if !bytes.Equal(rec.Position, expect[0].Position) {
						t.Fatalf("after a kill -9 and Open(%q), the source delivered %q where %q was expected: it was sent before the kill and never acknowledged, so it must come again, in order (due again: %s)",
							from, rec.Position, expect[0].Position, positions(expect))
					}
					expect = expect[1:]
					replayed++
				}
				window = append(window, rec)
			}
			n := min(len(window)-crashInFlight, k-len(acked))
			if last { // everything, as Stop wants acks in order
				n = len(window)
			}
			if n <= 0 {
				continue
			}
			if err := run.stream.Send(pconnector.SourceRunRequest{AckPositions: positionsOf(window[:n])}); err != nil {
				t.Fatalf("send acks: %v", err)
			}
			for _, rec := range window[:n] {
				ackedAt[string(rec.Position)] = k
			}
			acked, window = append(acked, window[:n]...), window[n:]
		}
		from = acked[len(acked)-1].Position
		if last {
			inst.stop(t, ctx)
			inst.mustTeardown(t)
			break
		}
		crash(t, p, &inst.instance, func() {})
		// What arrived unacknowledged comes again, then what was due
		// again and had not arrived yet.
		expect = append(window, expect...)
		kills = append(kills, crashKill{at: k, acked: len(acked), again: expect})
	}
	logKills(t, kills)
	t.Logf("%d records came again, in order, before the next kill or the end of the run", replayed)
}

func positionsOf(recs []opencdc.Record) []opencdc.Position {
	out := make([]opencdc.Position, len(recs))
	for i, r := range recs {
		out[i] = r.Position
	}
	return out
}
