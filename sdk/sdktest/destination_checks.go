package sdktest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	clientv2 "github.com/conduitio/conduit-connector-protocol/pconnector/v2/client"
	"github.com/connkit/connkit/internal/host"
	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/config"
)

func runDestination(t tb, s DestinationSuite) {
	t.Helper()
	s.Records = max(cmp.Or(s.Records, 20), 2)
	s.Timeout = cmp.Or(s.Timeout, time.Minute)
	if s.Record == nil {
		s.Record = TestRecord
	}
	runSuite(t, destinationRole(s), options{plugin: s.Plugin, skip: s.Skip, timeout: s.Timeout, ignore: s.IgnoreGoroutines}, func(run runner) []check {
		checks := destinationChecks(s, run)
		switch run := run.(type) {
		case inProcess:
			checks = append(checks,
				check{"WriteContract", func(t tb, ctx context.Context) { checkWriteContract(t, ctx, s) }},
				check{"Write/Failure", func(t tb, ctx context.Context) { checkWriteFailure(t, ctx, s) }})
		case outOfProcess:
			checks = append(checks,
				check{"Crash/Write", func(t tb, ctx context.Context) { checkCrashWrite(t, ctx, s, run) }})
		}
		return checks
	})
}

// dstInstance is a configured and opened destination.
type dstInstance struct {
	instance
	c      host.DestinationClient
	writes *writeLog // nil out of process
	run    *destinationRun
}

func openDestination(t tb, ctx context.Context, r runner, cfg map[string]string) *dstInstance {
	t.Helper()
	c, writes := r.destination(t)
	return openDestinationClient(t, ctx, c, writes, cfg)
}

// openDestinationClient configures, opens and runs the destination c.
func openDestinationClient(t tb, ctx context.Context, c host.DestinationClient, writes *writeLog, cfg map[string]string) *dstInstance {
	t.Helper()
	if writes != nil {
		writes.configured(cfg)
	}
	if _, err := c.Configure(ctx, pconnector.DestinationConfigureRequest{Config: cfg}); err != nil {
		t.Fatalf("Configure fails: %v", err)
	}
	if _, err := c.Open(ctx, pconnector.DestinationOpenRequest{}); err != nil {
		t.Fatalf("Open fails: %v", err)
	}
	inst := &dstInstance{instance: instance{lifecycle: destinationLifecycle{c}}, c: c, writes: writes}
	inst.tearDownAtEnd(t)
	run, err := startDestination(ctx, c)
	if err != nil {
		t.Fatalf("Run fails: %v", err)
	}
	inst.run, inst.stream = run, &run.streamReader
	return inst
}

// write sends records one per message, as Conduit's default engine does,
// then, if stop, stops the destination at the last one without waiting
// for acks, as Conduit does; it fails the check unless every record is
// acknowledged.
func (i *dstInstance) write(t tb, ctx context.Context, records []opencdc.Record, stop bool) {
	t.Helper()
	i.send(t, ctx, records, 1, stop)
}

// writeOneMessage is write with every record in one message, as Conduit's
// v2 engine carries a source's batch: the plugin has them all at once, so
// how it splits them into Writes does not depend on timing.
func (i *dstInstance) writeOneMessage(t tb, ctx context.Context, records []opencdc.Record) {
	t.Helper()
	i.send(t, ctx, records, len(records), true)
}

func (i *dstInstance) send(t tb, ctx context.Context, records []opencdc.Record, perMessage int, stop bool) {
	t.Helper()
	if err := i.run.send(records, perMessage); err != nil {
		t.Fatalf("%v", err)
	}
	if stop {
		i.stop(t, ctx, records[len(records)-1].Position)
	}
	if acc, err := i.run.account(ctx, records); err != nil {
		t.Fatalf("writing %d records: %s", len(records), accountOf(acc, err))
	}
}

// accountOf says what came back for records: each one's ack or nack
// (account.String), and what ended the acks, if not a nack.
func accountOf(acc account, err error) string {
	if _, nacked := err.(*host.NackError); nacked { // not joined with an end
		return acc.String()
	}
	return fmt.Sprintf("%s; then %v", acc, err)
}

func (i *dstInstance) stop(t tb, ctx context.Context, last opencdc.Position) {
	t.Helper()
	stopCtx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	if _, err := i.c.Stop(stopCtx, pconnector.DestinationStopRequest{LastPosition: last}); err != nil {
		t.Fatalf("Stop(%q) fails: %v\nStop waits until the last record is written: Write must return promptly, also for a partial batch.", last, err)
	}
}

func destinationChecks(s DestinationSuite, r runner) []check {
	n := s.Records
	creates := func() []opencdc.Record {
		first := nextIDs(n)
		recs := make([]opencdc.Record, n)
		for i := range recs {
			op := sdk.OperationCreate
			if i%4 == 3 {
				op = sdk.OperationSnapshot
			}
			recs[i] = s.Record(first+i, op, i%2 == 0)
		}
		return recs
	}
	return []check{
		{"OpenTeardown", func(t tb, ctx context.Context) {
			c, _ := r.destination(t)
			if _, err := c.Teardown(ctx, pconnector.DestinationTeardownRequest{}); err != nil {
				t.Errorf("Teardown without Configure fails: %v", err)
			}
			c, _ = r.destination(t)
			if _, err := c.Configure(ctx, pconnector.DestinationConfigureRequest{Config: s.Config}); err != nil {
				t.Fatalf("Configure fails: %v", err)
			}
			if _, err := c.Teardown(ctx, pconnector.DestinationTeardownRequest{}); err != nil {
				t.Errorf("Teardown without Open fails: %v\nTeardown may come without Open (Conduit validates configurations that way): release only what was acquired", err)
			}
			c, _ = r.destination(t)
			if _, err := c.Configure(ctx, pconnector.DestinationConfigureRequest{Config: s.Config}); err != nil {
				t.Fatalf("Configure fails: %v", err)
			}
			if _, err := c.Open(ctx, pconnector.DestinationOpenRequest{}); err != nil {
				t.Fatalf("Open fails: %v", err)
			}
			if _, err := c.Teardown(ctx, pconnector.DestinationTeardownRequest{}); err != nil {
				t.Errorf("Teardown after Open, without Run, fails: %v", err)
			}
		}},
		{"Lifecycle", func(t tb, ctx context.Context) {
			checkLifecycle(t, ctx, s.Config, func() lifecycleClient {
				c, _ := r.destination(t)
				return destinationLifecycle{c}
			})
		}},
		{"Write/Operations", func(t tb, ctx context.Context) {
			// Every operation, with raw and structured data; the delete and
			// update follow a create of the same record.
			var recs []opencdc.Record
			for _, structured := range []bool{false, true} {
				id := nextIDs(3)
				recs = append(recs,
					s.Record(id, sdk.OperationCreate, structured),
					s.Record(id, sdk.OperationUpdate, structured),
					s.Record(id+1, sdk.OperationSnapshot, structured),
					s.Record(id+2, sdk.OperationCreate, structured),
					s.Record(id+2, sdk.OperationDelete, structured))
			}
			for i := range recs {
				recs[i].Position = opencdc.Position(fmt.Sprintf("%s-%d", recs[i].Position, i))
			}
			inst := openDestination(t, ctx, r, s.Config)
			if err := inst.run.send(recs, 1); err != nil {
				t.Fatalf("%v", err)
			}
			acked, err := inst.run.wait(ctx, recs)
			if err != nil {
				what := ""
				if acked < len(recs) {
					what = fmt.Sprintf(" (a %s with %s data)", recs[acked].Operation, dataKind(recs[acked].Key))
				}
				t.Fatalf("the destination failed a record%s: %v\nA destination must write every operation, with raw and structured keys and payloads.", what, err)
			}
			inst.stop(t, ctx, recs[len(recs)-1].Position)
			inst.mustTeardown(t)
		}},
		{"RoundTrip", func(t tb, ctx context.Context) {
			if s.ReadBack == nil {
				t.Skipf("set DestinationSuite.ReadBack to check that what is acknowledged is really written")
			}
			recs := creates()
			inst := openDestination(t, ctx, r, s.Config)
			inst.write(t, ctx, recs, true)
			inst.mustTeardown(t)
			checkReadBack(t, ctx, s, recs, acknowledged)
		}},
		{"RoundTrip/Keyed", func(t tb, ctx context.Context) {
			if s.ReadBack == nil || !s.Keyed {
				t.Skipf("set DestinationSuite.Keyed and ReadBack to check updates and deletes by key")
			}
			// Per kind of data: a record updated, one deleted, one kept.
			var recs []opencdc.Record
			var want []opencdc.Record
			var deleted []string
			for _, structured := range []bool{false, true} {
				id := nextIDs(3)
				updated := s.Record(id, sdk.OperationUpdate, structured)
				recs = append(recs,
					s.Record(id, sdk.OperationCreate, structured),
					s.Record(id+1, sdk.OperationCreate, structured),
					s.Record(id+2, sdk.OperationSnapshot, structured),
					updated,
					s.Record(id+1, sdk.OperationDelete, structured))
				want = append(want, updated, s.Record(id+2, sdk.OperationSnapshot, structured))
				deleted = append(deleted, fmt.Sprint(id+1))
			}
			for i := range recs {
				recs[i].Position = opencdc.Position(fmt.Sprintf("%s-%d", recs[i].Position, i))
			}
			inst := openDestination(t, ctx, r, s.Config)
			inst.write(t, ctx, recs, true)
			inst.mustTeardown(t)
			checkReadBack(t, ctx, s, want, acknowledged)
			read, err := s.ReadBack(ctx)
			if err != nil {
				t.Fatalf("DestinationSuite.ReadBack fails: %v", err)
			}
			for _, rec := range read {
				if f, ok := fields(rec.Payload.After); ok && slices.Contains(deleted, f["id"]) {
					t.Errorf("the record with id %s is still there after it was deleted: a delete must remove the record with its key", f["id"])
				}
			}
		}},
		{"Stop", func(t tb, ctx context.Context) {
			recs := creates()
			inst := openDestination(t, ctx, r, s.Config)
			inst.write(t, ctx, recs, true)
			inst.mustTeardown(t)
		}},
		{"Batching/Size", func(t tb, ctx context.Context) {
			const size = 6 // the records do not fill the last batch
			inst := openDestination(t, ctx, r, merge(s.Config, map[string]string{"sdk.batch.size": fmt.Sprint(size)}))
			recs := creates()
			inst.writeOneMessage(t, ctx, recs)
			inst.mustTeardown(t)
			checkWrites(t, inst.writes, len(recs), size, fmt.Sprintf("sdk.batch.size=%d", size))
			checkReadBack(t, ctx, s, recs, acknowledged)
		}},
		{"Batching/Delay", func(t tb, ctx context.Context) {
			inst := openDestination(t, ctx, r, merge(s.Config, map[string]string{"sdk.batch.delay": "20ms"}))
			recs := creates()
			inst.write(t, ctx, recs, false) // the delay alone must flush
			inst.stop(t, ctx, recs[len(recs)-1].Position)
			inst.mustTeardown(t)
			checkWrites(t, inst.writes, len(recs), 0, "sdk.batch.delay=20ms")
			checkReadBack(t, ctx, s, recs, acknowledged)
		}},
		{"Batching/Bytes", func(t tb, ctx context.Context) {
			inst := openDestination(t, ctx, r, merge(s.Config, map[string]string{"sdk.batch.bytes": "1"}))
			recs := creates()
			inst.write(t, ctx, recs, true)
			inst.mustTeardown(t)
			checkWrites(t, inst.writes, len(recs), 1, "sdk.batch.bytes=1")
			checkReadBack(t, ctx, s, recs, acknowledged)
		}},
	}
}

// checkWrites checks how the plugin server called Write, in process.
func checkWrites(t tb, writes *writeLog, total, max int, settings string) {
	t.Helper()
	if writes == nil {
		return
	}
	sizes, concurrent, sharedKey := writes.calls()
	sum := 0
	for _, n := range sizes {
		sum += n
		if n == 0 || (max > 0 && n > max) {
			t.Errorf("with %s, Write was called with batches of %v records: the batching middleware is not honoured (is the connector's Middleware replaced?)", settings, sizes)
			break
		}
	}
	if sum != total {
		t.Errorf("with %s, Write was called with %d records in all (batches %v), %d were sent", settings, sum, sizes, total)
	}
	switch {
	case concurrent && writes.oneAtATime():
		t.Errorf("Write was called concurrently with itself")
	case sharedKey != "":
		t.Errorf("two Writes running together had records with the key %q, which the destination asks to keep in one lane (sdk.SplitByKey)", sharedKey)
	}
}

// checkReadBack checks that ReadBack finds each record written, once, with
// its payload's fields; how says how the kit knows they are written (by
// their acks, or by Write's n).
func checkReadBack(t tb, ctx context.Context, s DestinationSuite, written []opencdc.Record, how string) {
	t.Helper()
	if s.ReadBack == nil {
		return
	}
	read, err := s.ReadBack(ctx)
	if err != nil {
		t.Fatalf("DestinationSuite.ReadBack fails: %v", err)
	}
	missing, duplicated, differ := findWritten(written, read)
	if len(missing) > 0 {
		t.Errorf("%d records %s are not in the destination's system: %s\nAcknowledge only what is durably written (Write's n counts the leading records written).", len(missing), how, firstOf(missing))
	}
	if len(duplicated) > 0 {
		t.Errorf("%d records were written more than once: %s", len(duplicated), firstOf(duplicated))
	}
	if len(differ) > 0 {
		t.Errorf("records read back differ from what was written: %s", differences(differ))
	}
}

// differences says how records read back differ, as [DiffRecords] does:
// the first difference, then how many more records differ.
func differences(differ []string) string {
	switch n := len(differ) - 1; {
	case n == 1:
		return differ[0] + "; 1 more record differs"
	case n > 1:
		return fmt.Sprintf("%s; %d more records differ", differ[0], n)
	}
	return differ[0]
}

// checkWriteContract calls Write of the destination configured with the
// suite's Config directly and checks its results keep the io.Writer-like
// contract, also when its context is cancelled, the failure the kit can
// inject into any connector.
func checkWriteContract(t tb, ctx context.Context, s DestinationSuite) {
	d := configuredDestination(t, ctx, s.Connector, s.Config)
	if err := d.Open(ctx); err != nil {
		t.Fatalf("Open fails: %v", err)
	}
	defer func() {
		if err := d.Teardown(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("Teardown fails: %v", err)
		}
	}()
	write := func(ctx context.Context, what string, recs []opencdc.Record) (int, error) {
		t.Helper()
		before := cloneRecords(recs)
		n, err := d.Write(ctx, recs)
		switch {
		case n < 0 || n > len(recs):
			t.Errorf("Write of %d records %s returned n=%d: n must be between 0 and the number of records", len(recs), what, n)
		case n < len(recs) && err == nil:
			t.Errorf("Write of %d records %s returned n=%d and no error: a short write must return an error saying why", len(recs), what, n)
		}
		if !reflect.DeepEqual(before, recs) {
			d := DiffRecords(recs, before)
			if d == "" {
				d = "a nil value became empty, or the reverse"
			}
			t.Errorf("Write %s modified the records it was given: %s (want: as given)\nWrite must not modify the slice or the records.", what, d)
		}
		return max(0, min(n, len(recs))), err
	}
	recs := make([]opencdc.Record, s.Records)
	first := nextIDs(len(recs))
	for i := range recs {
		recs[i] = s.Record(first+i, sdk.OperationCreate, i%2 == 1)
	}
	half := len(recs) / 2
	n, err := write(ctx, "with a live context", recs[:half])
	if n < half {
		t.Errorf("Write of %d records with a live context, nothing injected, returned n=%d and error %q: %s; a Write that nothing fails writes every record", half, n, err, writtenUpTo(n, half))
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	m, _ := write(cancelled, "with a cancelled context", recs[half:])
	checkReadBack(t, ctx, s, append(recs[:n:n], recs[half:half+m]...), "that Write counted as written (its n)")
}

// writtenUpTo says which of size records a Write that returned n wrote.
func writtenUpTo(n, size int) string {
	switch n {
	case 0:
		return "no record written, record 1 failed"
	case 1:
		return "record 1 written, record 2 failed"
	}
	return fmt.Sprintf("records 1-%d written, record %d failed", n, n+1)
}

// acknowledged is how the kit knows records written through the
// protocol: by their positive acks.
const acknowledged = "acknowledged"

// configuredDestination configures c's destination with cfg over the
// protocol, in an sdk.Server of its own, as Conduit does, and returns the
// destination c built, which nothing has opened.
func configuredDestination(t tb, ctx context.Context, c sdk.Connector, cfg map[string]string) sdk.Destination {
	t.Helper()
	built := make(chan sdk.Destination, 1)
	c.Destination = c.Destination.Wrap(func(d sdk.Destination) sdk.Destination {
		built <- d
		return d
	})
	if _, err := clientv2.NewDestinationPluginClient(inProcess{}.serve(t, c)).Configure(ctx, pconnector.DestinationConfigureRequest{Config: cfg}); err != nil {
		t.Fatalf("Configure fails: %v", err)
	}
	return <-built
}

func cloneRecords(recs []opencdc.Record) []opencdc.Record {
	out := make([]opencdc.Record, len(recs))
	for i, r := range recs {
		out[i] = r.Clone()
	}
	return out
}

// checkWriteFailure injects a failure into a Write in the middle of a
// batch, the way a system that rejects a record fails it: the records
// before it are acknowledged, it and the rest of its batch are nacked with
// the error, and, with ReadBack, the acknowledged ones are written.
func checkWriteFailure(t tb, ctx context.Context, s DestinationSuite) {
	const size, k = 4, 6 // the failure is in the second batch, not at its start
	injected := errors.New("sdktest: injected failure")
	r := inProcess{c: s.Connector, wrap: func(d sdk.Destination) sdk.Destination { return FailAt(d, k, injected) }}
	spec, err := s.Connector.Specification()
	if err != nil {
		t.Fatalf("Connector.Specification fails: %v", err)
	}
	cfg := s.Config
	if slices.ContainsFunc(spec.DestinationParameters, func(p config.Parameter) bool { return p.Name == "sdk.batch.size" }) {
		cfg = merge(cfg, map[string]string{"sdk.batch.size": fmt.Sprint(size)})
	}
	recs := make([]opencdc.Record, 2*size)
	first := nextIDs(len(recs))
	for i := range recs {
		recs[i] = s.Record(first+i, sdk.OperationCreate, i%2 == 0)
	}
	inst := openDestination(t, ctx, r, cfg)
	if err := inst.run.send(recs, 1); err != nil {
		t.Fatalf("%v", err)
	}
	inst.stop(t, ctx, recs[len(recs)-1].Position)
	acc, err := inst.run.account(ctx, recs)
	var nack *host.NackError
	injectedAt := fmt.Sprintf("with a failure injected at record %d of %d, in Writes of %d", k+1, len(recs), size)
	switch lead := acc.leading(); {
	case !errors.As(err, &nack):
		t.Errorf("%s: %s", injectedAt, accountOf(acc, err))
	case lead < k && !strings.Contains(nack.Message, injected.Error()):
		t.Errorf("%s, the destination failed before it, on its own: %s", injectedAt, acc)
	case lead != k:
		t.Errorf("%s: %s; Write must count the records it wrote before the failure, and only those", injectedAt, acc)
	case !strings.Contains(nack.Message, injected.Error()):
		t.Errorf("%s, its nack does not carry the failure: %s", injectedAt, acc)
	}
	inst.mustTeardown(t)
	checkReadBack(t, ctx, s, acc.acknowledged(recs), acknowledged)
}
