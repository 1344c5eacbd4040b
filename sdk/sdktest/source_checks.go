package sdktest

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/host"
)

// stopTimeout bounds Stop and Teardown: they must return promptly, and this
// is generous for a loaded machine.
const stopTimeout = 15 * time.Second

func runSource(t tb, s SourceSuite) {
	t.Helper()
	s.Records = max(cmp.Or(s.Records, 20), 2)
	s.Timeout = cmp.Or(s.Timeout, time.Minute)
	o := options{plugin: s.Plugin, skip: s.Skip, timeout: s.Timeout, ignore: s.IgnoreGoroutines}
	runSuite(t, sourceRole(s), o, func(run runner) []check {
		checks := sourceChecks(s, run)
		if run, ok := run.(outOfProcess); ok {
			checks = append(checks, check{"Crash/Read", func(t tb, ctx context.Context) { checkCrashRead(t, ctx, s, run) }})
		}
		return checks
	})
}

// srcInstance is a configured and opened source.
type srcInstance struct {
	instance
	c   host.SourceClient
	run *sourceRun
}

func openSource(t tb, ctx context.Context, r runner, cfg map[string]string, from opencdc.Position) *srcInstance {
	t.Helper()
	return openSourceClient(t, ctx, r.source(t), cfg, from)
}

// openSourceClient configures and opens the source c.
func openSourceClient(t tb, ctx context.Context, c host.SourceClient, cfg map[string]string, from opencdc.Position) *srcInstance {
	t.Helper()
	if _, err := c.Configure(ctx, pconnector.SourceConfigureRequest{Config: cfg}); err != nil {
		t.Fatalf("Configure fails: %v", err)
	}
	if _, err := c.Open(ctx, pconnector.SourceOpenRequest{Position: from}); err != nil {
		t.Fatalf("Open(%q) fails: %v", from, err)
	}
	inst := &srcInstance{instance: instance{lifecycle: sourceLifecycle{c}}, c: c}
	inst.tearDownAtEnd(t)
	return inst
}

func (i *srcInstance) start(t tb, ctx context.Context) *sourceRun {
	t.Helper()
	run, err := startSource(ctx, i.c)
	if err != nil {
		t.Fatalf("Run fails: %v", err)
	}
	i.run, i.stream = run, &run.streamReader
	return run
}

// stop stops the source as Conduit does, acking what arrives until the
// position Stop returned, and returns every record read.
func (i *srcInstance) stop(t tb, ctx context.Context) (opencdc.Position, []opencdc.Record) {
	t.Helper()
	stopCtx, cancel := context.WithTimeout(ctx, stopTimeout)
	defer cancel()
	resp, err := i.c.Stop(stopCtx, pconnector.SourceStopRequest{})
	if err != nil {
		t.Fatalf("Stop fails: %v\nStop must return promptly: Read (or ReadBatch) must return as soon as its context is done.", err)
	}
	if len(resp.LastPosition) == 0 {
		return nil, nil
	}
	got, err := i.run.until(stopCtx, resp.LastPosition, true)
	if err != nil {
		t.Fatalf("Stop returned position %q, but the record with it never arrived: %v", resp.LastPosition, err)
	}
	if !bytes.Equal(got[len(got)-1].Position, resp.LastPosition) {
		t.Errorf("records arrived after position %q, which Stop returned as the last one sent: %s", resp.LastPosition, positions(got))
	}
	return resp.LastPosition, got
}

func ackAll(opencdc.Record) bool { return true }

// tooFew explains a read that timed out.
func tooFew(err error) string {
	if !errors.Is(err, context.DeadlineExceeded) {
		return ""
	}
	return "\nRead must return records as long as there are any; if the source has no more with this Config, give SourceSuite.Config more data or lower SourceSuite.Records."
}

func sourceChecks(s SourceSuite, r runner) []check {
	n := s.Records
	return []check{
		{"OpenTeardown", func(t tb, ctx context.Context) {
			c := r.source(t)
			if _, err := c.Teardown(ctx, pconnector.SourceTeardownRequest{}); err != nil {
				t.Errorf("Teardown without Configure fails: %v\nConduit tears down connectors it never configured; the SDK handles this, so a failure here is the SDK's", err)
			}
			c = r.source(t)
			if _, err := c.Configure(ctx, pconnector.SourceConfigureRequest{Config: s.Config}); err != nil {
				t.Fatalf("Configure fails: %v", err)
			}
			if _, err := c.Teardown(ctx, pconnector.SourceTeardownRequest{}); err != nil {
				t.Errorf("Teardown without Open fails: %v\nTeardown may come without Open (Conduit validates configurations that way): release only what was acquired", err)
			}
			inst := openSource(t, ctx, r, s.Config, nil)
			inst.mustTeardown(t)
		}},
		{"Lifecycle", func(t tb, ctx context.Context) {
			checkLifecycle(t, ctx, s.Config, func() lifecycleClient { return sourceLifecycle{r.source(t)} })
		}},
		{"Read", func(t tb, ctx context.Context) {
			inst := openSource(t, ctx, r, s.Config, nil)
			recs, err := inst.start(t, ctx).read(ctx, n, ackAll)
			if err != nil {
				t.Fatalf("reading %d records: %v%s", n, err, tooFew(err))
			}
			checkRecords(t, recs)
			inst.stop(t, ctx)
			inst.mustTeardown(t)
		}},
		{"Resume", func(t tb, ctx context.Context) { checkResume(t, ctx, s, r) }},
		{"Stop", func(t tb, ctx context.Context) {
			inst := openSource(t, ctx, r, s.Config, nil)
			run := inst.start(t, ctx)
			first, err := run.read(ctx, 1, ackAll)
			if err != nil {
				t.Fatalf("reading the first record: %v", err)
			}
			last, _ := inst.stop(t, ctx)
			if last == nil {
				t.Errorf("Stop returned no position after %d records were sent: it must return the last one sent", len(first))
			}
			all, _ := run.all()
			if len(all) > 0 && !bytes.Equal(all[len(all)-1].Position, last) {
				t.Errorf("Stop returned %q, but the last record sent was %q", last, all[len(all)-1].Position)
			}
			inst.mustTeardown(t)
		}},
		{"Batching/Size", func(t tb, ctx context.Context) {
			const size = 7
			inst := openSource(t, ctx, r, merge(s.Config, map[string]string{"sdk.batch.size": fmt.Sprint(size), "sdk.batch.delay": "1h"}), nil)
			run := inst.start(t, ctx)
			if _, err := run.read(ctx, n, ackAll); err != nil {
				t.Fatalf("reading %d records with sdk.batch.size=%d: %v", n, size, err)
			}
			inst.stop(t, ctx) // flushes the partial batch
			_, messages := run.all()
			for _, m := range messages {
				if m > size {
					t.Fatalf("a message carried %d records with sdk.batch.size=%d (messages: %v)", m, size, messages)
				}
			}
			inst.mustTeardown(t)
		}},
		{"Batching/Bytes", func(t tb, ctx context.Context) {
			inst := openSource(t, ctx, r, merge(s.Config, map[string]string{"sdk.batch.bytes": "1"}), nil)
			run := inst.start(t, ctx)
			if _, err := run.read(ctx, n, ackAll); err != nil {
				t.Fatalf("reading %d records with sdk.batch.bytes=1: %v", n, err)
			}
			inst.stop(t, ctx)
			if _, messages := run.all(); slices.ContainsFunc(messages, func(m int) bool { return m != 1 }) {
				t.Errorf("with sdk.batch.bytes=1 every record must travel alone; messages carried %v records", messages)
			}
			inst.mustTeardown(t)
		}},
		{"Batching/Delay", func(t tb, ctx context.Context) {
			inst := openSource(t, ctx, r, merge(s.Config, map[string]string{"sdk.batch.delay": "10ms"}), nil)
			if _, err := inst.start(t, ctx).read(ctx, n, ackAll); err != nil {
				t.Fatalf("reading %d records with only sdk.batch.delay set: %v", n, err)
			}
			inst.stop(t, ctx)
			inst.mustTeardown(t)
		}},
	}
}

// checkRecords checks what a source read is well-formed.
func checkRecords(t tb, recs []opencdc.Record) {
	t.Helper()
	seen := make(map[string]bool, len(recs))
	ops := map[string]int{}
	kinds := map[string]int{}
	for i, rec := range recs {
		if len(rec.Position) == 0 {
			t.Errorf("record %d has no position: every record needs a non-empty position, unique within the source", i)
			continue
		}
		if seen[string(rec.Position)] {
			t.Errorf("position %q was read twice: positions must be unique", rec.Position)
		}
		seen[string(rec.Position)] = true
		switch rec.Operation {
		case opencdc.OperationCreate, opencdc.OperationUpdate, opencdc.OperationSnapshot:
			if rec.Payload.After == nil {
				t.Errorf("record %q (%s) has no payload after: a %s carries the data in Payload.After", rec.Position, rec.Operation, rec.Operation)
			}
		case opencdc.OperationDelete:
			if rec.Key == nil {
				t.Errorf("record %q is a delete without a key: a delete must say what it deletes", rec.Position)
			}
		default:
			t.Errorf("record %q has operation %v: use create, update, delete or snapshot", rec.Position, rec.Operation)
		}
		ops[rec.Operation.String()]++
		kinds[dataKind(rec.Payload.After)]++
	}
	t.Logf("read %d records: operations %v, payloads %v", len(recs), ops, kinds)
}

func dataKind(d opencdc.Data) string {
	switch d.(type) {
	case nil:
		return "none"
	case opencdc.StructuredData:
		return "structured"
	default:
		return "raw"
	}
}

// checkResume reads records, acknowledges only the first half, and
// restarts the source from the last acknowledged position: it must deliver
// the unacknowledged records next, and none of the acknowledged ones.
func checkResume(t tb, ctx context.Context, s SourceSuite, r runner) {
	n, k := s.Records, s.Records/2
	inst := openSource(t, ctx, r, s.Config, nil)
	run := inst.start(t, ctx)
	acked := 0
	first, err := run.read(ctx, n, func(opencdc.Record) bool { acked++; return acked <= k })
	if err != nil {
		t.Fatalf("reading %d records: %v%s", n, err, tooFew(err))
	}
	if err := inst.teardown(ctx); err != nil { // a crash: no Stop
		t.Errorf("Teardown fails: %v", err)
	}
	from := first[k-1].Position
	again := openSource(t, ctx, r, s.Config, from)
	second, err := again.start(t, ctx).read(ctx, n-k, ackAll)
	if err != nil {
		t.Fatalf("reading %d records after resuming from %q: %v%s", n-k, from, err, tooFew(err))
	}
	ackedPos := map[string]bool{}
	for _, rec := range first[:k] {
		ackedPos[string(rec.Position)] = true
	}
	for _, rec := range second {
		if ackedPos[string(rec.Position)] {
			t.Fatalf("after Open(%q) the source delivered %q again, which was acknowledged before the restart: Open must resume right after the position it is given", from, rec.Position)
		}
	}
	for i, rec := range first[k:n] {
		if i >= len(second) || !bytes.Equal(second[i].Position, rec.Position) {
			got := "nothing"
			if i < len(second) {
				got = fmt.Sprintf("%q", second[i].Position)
			}
			t.Fatalf("after Open(%q) the source delivered %s where %q was expected: it read %s before the restart and never got its ack, so it must deliver it again, in order (positions before: %s)",
				from, got, rec.Position, rec.Position, positions(first))
		}
	}
	again.stop(t, ctx)
	again.mustTeardown(t)
}

// positions lists the positions of the last records of recs.
func positions(recs []opencdc.Record) string {
	var b strings.Builder
	if len(recs) > 10 {
		fmt.Fprintf(&b, "(%d before) ", len(recs)-10)
		recs = recs[len(recs)-10:]
	}
	for i, r := range recs {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%q", r.Position)
	}
	return b.String()
}
