package sdktest

import (
	"context"
	"fmt"
	"slices"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/config"
)

// checkCrashWrite sends a run of records to the plugin binary, kills it
// with SIGKILL at the suite's kill points and sends every record not
// acknowledged before a kill again, in order, to a fresh plugin process, as
// Conduit does. Each kill takes Conduit with it: the acknowledgements of
// the last batch written before it are lost, so those records, written,
// come again too, next to those of the partial batch the plugin held. With ReadBack, every record must then be in the system,
// those acknowledged before a kill above all, and, as Delivery says, once.
func checkCrashWrite(t tb, ctx context.Context, s DestinationSuite, r outOfProcess) {
	if s.ReadBack == nil {
		t.Skipf("set DestinationSuite.ReadBack to check that a kill -9 loses no acknowledged record: the check compares what the system holds after the kills with what was acknowledged")
	}
	at := s.Crash.points(t, "DestinationSuite")
	cfg, batch := crashBatching(t, s)
	recs := make([]opencdc.Record, s.Crash.Records)
	first := nextIDs(len(recs))
	for i := range recs {
		recs[i] = s.Record(first+i, sdk.OperationCreate, i%2 == 0)
	}
	acked := 0
	var kills []crashKill
	for _, k := range at {
		p, c := r.launchDestination(t)
		inst := openDestinationClient(t, ctx, c, nil, cfg)
		sent := recs[acked:k]
		if err := inst.run.send(sent, 1); err != nil {
			t.Fatalf("%v", err)
		}
		// The kill comes once the full batches are acknowledged; without
		// batching settings, all but the last crashInFlight records.
		full := len(sent) - len(sent)%batch
		if batch == 0 {
			full = max(len(sent)-crashInFlight, 1)
		}
		n, err := inst.run.wait(ctx, sent[:full])
		if err != nil {
			t.Fatalf("writing the records before the kill at record %d: %v", k, err)
		}
		crash(t, p, &inst.instance, func() { n += inst.run.drained(t, ctx, sent[n:]) })
		// Conduit dies with the plugin and loses the last batch's acks:
		// those records are written, and sent again all the same.
		n = max(n-max(batch, crashInFlight), 0)
		acked += n
		kills = append(kills, crashKill{at: k, acked: acked, again: sent[n:]})
	}
	if acked < len(recs) {
		inst := openDestination(t, ctx, r, cfg)
		inst.write(t, ctx, recs[acked:], true)
		inst.mustTeardown(t)
	}
	logKills(t, kills) // all of them sent again, in order
	checkCrashReadBack(t, ctx, s, recs, kills)
}

// crashBatch is the batch size of the destination crash check: the kill
// points of the default Crashes are not at a batch's boundary.
const crashBatch = 16

// crashBatching returns the crash check's configuration: s.Config with
// batches of crashBatch records that wait to fill, if the destination has
// the sdk.batch settings, and the batch size, else 0.
func crashBatching(t tb, s DestinationSuite) (map[string]string, int) {
	t.Helper()
	spec, err := s.Connector.Specification()
	if err != nil {
		t.Fatalf("Connector.Specification fails: %v", err)
	}
	has := func(name string) bool {
		return slices.ContainsFunc(spec.DestinationParameters, func(p config.Parameter) bool { return p.Name == name })
	}
	if !has("sdk.batch.size") || !has("sdk.batch.delay") {
		return s.Config, 0
	}
	return merge(s.Config, map[string]string{"sdk.batch.size": fmt.Sprint(crashBatch), "sdk.batch.delay": "1h"}), crashBatch
}

// checkCrashReadBack checks what the system holds after the kills: every
// record written, as written, and, as s.Delivery says, once.
func checkCrashReadBack(t tb, ctx context.Context, s DestinationSuite, written []opencdc.Record, kills []crashKill) {
	t.Helper()
	read, err := s.ReadBack(ctx)
	if err != nil {
		t.Fatalf("DestinationSuite.ReadBack fails: %v", err)
	}
	missing, duplicated, differ := findWritten(written, read)
	index := make(map[string]int, len(written))
	for i, r := range written {
		index[string(r.Position)] = i
	}
	var lost, unwritten []string
	for _, pos := range missing {
		i := index[pos]
		if j := killAfter(kills, i); j >= 0 {
			lost = append(lost, fmt.Sprintf("%q (record %d, acknowledged before the kill at record %d)", pos, i, kills[j].at))
		} else {
			unwritten = append(unwritten, fmt.Sprintf("%q (record %d)", pos, i))
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d records acknowledged before a kill -9 are not in the destination's system after the restart: %s\nAcknowledge only what is durably written: Write must not count a record a crash right after it returns can lose.", len(lost), firstOf(lost))
	}
	if len(unwritten) > 0 {
		t.Errorf("%d records sent again after a kill -9 and acknowledged are not in the destination's system at the end: %s", len(unwritten), firstOf(unwritten))
	}
	switch {
	case len(duplicated) == 0:
	case s.Delivery.once():
		t.Errorf("%d records are in the destination's system more than once after the kills, though DestinationSuite.Delivery is %v: %s\nA record Conduit sends again after a crash must not add a copy.", len(duplicated), s.Delivery, firstOf(quoted(duplicated)))
	default:
		t.Logf("%d records are in the destination's system more than once after the kills, as %v allows: %s", len(duplicated), s.Delivery, firstOf(quoted(duplicated)))
	}
	if len(differ) > 0 {
		t.Errorf("records read back after the kills differ from what was written: %s", differences(differ))
	}
}

// killAfter returns the first kill before which written record i was
// acknowledged, or -1.
func killAfter(kills []crashKill, i int) int {
	for j, k := range kills {
		if i < k.acked {
			return j
		}
	}
	return -1
}

func quoted(items []string) []string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
