package plugin

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/matryer/is"
)

func batchedSourceServer(t *testing.T, src testSource, p batcher.Policy) *sourceServer {
	t.Helper()
	s := testSourceServer(func(map[string]string) (Source, error) { return sourceOf(src, p), nil })
	if _, err := s.Configure(t.Context(), pconnector.SourceConfigureRequest{}); err != nil {
		t.Fatal(err)
	}
	return s
}

// endSource cancels a source's Run, which must return without an error,
// and tears the source down.
func endSource(t *testing.T, s *sourceServer, cancel context.CancelFunc, runDone <-chan error) {
	t.Helper()
	cancel()
	if err := <-runDone; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := s.Teardown(t.Context(), pconnector.SourceTeardownRequest{}); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
}

// messages returns the position lists of the messages sent so far.
func messages(st sourceStream) [][]string {
	var out [][]string
	for {
		select {
		case m := <-st.out:
			out = append(out, positions(m))
		default:
			return out
		}
	}
}

// TestSourceBatching reads a source under each policy. Sending takes no
// time here, so the sender is free whenever a record is read: without a
// delay, every record read goes out at once, alone or with the others read
// meanwhile, never waiting for a batch to fill; with a delay, a batch waits
// for it.
func TestSourceBatching(t *testing.T) {
	tests := []struct {
		name    string
		policy  batcher.Policy
		limit   int        // records the source has
		wantRun [][]string // messages sent before Stop; nil: any grouping within the limits
	}{
		{"size", batcher.Policy{Count: 2}, 5, nil},
		{"delay sends a partial batch while Read waits", batcher.Policy{Count: 10, Delay: time.Second}, 3, [][]string{{"1", "2", "3"}}},
		{"bytes", batcher.Policy{Bytes: 2}, 4, nil}, // positions are the bytes here
		{"none", batcher.Policy{}, 4, nil},
	}
	for _, tt := range tests {
		for _, batchRead := range []bool{false, true} {
			name := tt.name
			if batchRead {
				name += " with ReadBatch"
			}
			t.Run(name, func(t *testing.T) {
				leakcheck.Check(t)
				synctest.Test(t, func(t *testing.T) {
					is := is.New(t)
					fake := &fakeSource{limit: tt.limit}
					var src testSource = fake
					bs := &batchSource{fakeSource: fake}
					if batchRead {
						src = bs
					}
					s := batchedSourceServer(t, src, tt.policy)
					ctx, cancel := context.WithCancel(t.Context())
					st, runDone := runSource(ctx, s)
					time.Sleep(2 * time.Second)
					synctest.Wait()
					sent := messages(st)
					if tt.wantRun != nil {
						is.Equal(sent, tt.wantRun)
					}
					var all []string
					for _, m := range sent {
						is.True(len(m) > 0)
						if tt.policy.Count > 0 {
							is.True(len(m) <= tt.policy.Count)
						}
						if tt.policy.Bytes > 0 {
							is.True(len(m) <= tt.policy.Bytes) // one byte per record
						}
						all = append(all, m...)
					}
					var want []string
					for i := 1; i <= tt.limit; i++ {
						want = append(want, strconv.Itoa(i))
					}
					is.Equal(all, want) // everything read is sent, in order, before Stop
					resp, err := s.Stop(t.Context(), pconnector.SourceStopRequest{})
					is.NoErr(err)
					is.Equal(len(messages(st)), 0)
					is.Equal(string(resp.LastPosition), strconv.Itoa(tt.limit))
					cancel()
					is.NoErr(<-runDone)
					_, err = s.Teardown(t.Context(), pconnector.SourceTeardownRequest{})
					is.NoErr(err)
					if batchRead {
						is.True(len(bs.asked) > 0)
						if tt.policy.Count > 0 {
							is.Equal(bs.asked[0], tt.policy.Count) // asks for a batch's worth
						}
					}
				})
			})
		}
	}
}

// TestSourceBoundStopsReading: while Conduit does not take messages, the
// source is read up to the hold bound (two batches) and one full inbox at
// least, since the reader reads until its inbox is full, and two at most,
// since the owner takes a whole inbox whenever the bound has room; once
// Conduit takes messages, reading goes on, never further ahead.
func TestSourceBoundStopsReading(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		const n = 3 * inboxCount
		fake := &fakeSource{limit: n}
		p := batcher.Policy{Count: 2}
		s := batchedSourceServer(t, fake, p)
		ctx, cancel := context.WithCancel(t.Context())
		// A stream whose Send blocks until a message is taken.
		st := sourceStream{&stream[pconnector.SourceRunRequest, pconnector.SourceRunResponse]{ctx: ctx, in: make(chan pconnector.SourceRunRequest), out: make(chan pconnector.SourceRunResponse)}}
		runDone := make(chan error, 1)
		go func() { runDone <- s.Run(ctx, st) }()
		synctest.Wait()
		read := func() int {
			fake.mu.Lock()
			defer fake.mu.Unlock()
			return fake.next
		}
		bound := holdFor(p).Count
		least, most := bound+inboxCount, bound-1+2*inboxCount
		if r := read(); r < least || r > most {
			t.Fatalf("%d records read while Conduit takes none, want %d to %d", r, least, most)
		}
		var got []string
		for len(got) < n {
			got = append(got, positions(<-st.out)...)
			synctest.Wait()
			is.True(read()-len(got) <= most) // never further ahead
		}
		is.Equal(got[n-1], strconv.Itoa(n))
		endSource(t, s, cancel, runDone)
	})
}

// TestSourceStopNeverDiscardsRecords stops a source whose batch is still
// being collected: what was read goes out before Stop returns.
func TestSourceStopNeverDiscardsRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		s := batchedSourceServer(t, &fakeSource{limit: 3}, batcher.Policy{Count: 100, Delay: time.Hour})
		ctx, cancel := context.WithCancel(t.Context())
		st, runDone := runSource(ctx, s)
		synctest.Wait()
		is.Equal(len(messages(st)), 0) // collecting: neither full nor due
		resp, err := s.Stop(t.Context(), pconnector.SourceStopRequest{})
		is.NoErr(err)
		is.Equal(messages(st), [][]string{{"1", "2", "3"}})
		is.Equal(string(resp.LastPosition), "3")
		endSource(t, s, cancel, runDone)
	})
}

// pacedSource is a fakeSource that reads a record every millisecond.
type pacedSource struct{ *fakeSource }

func (s pacedSource) Read(ctx context.Context) (opencdc.Record, error) {
	select {
	case <-time.After(time.Millisecond):
	case <-ctx.Done():
		return opencdc.Record{}, ctx.Err()
	}
	return s.fakeSource.Read(ctx)
}

// TestSourceBatchesWhileConduitWorks plays Conduit's v2 engine, which
// takes a message only once it has acked the last, taking 5 ms per
// message, against a source reading a record every millisecond and no
// batch settings: the records read while Conduit works on a message
// travel together in the next, not each in a message of its own waiting
// in the stream.
func TestSourceBatchesWhileConduitWorks(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		s := batchedSourceServer(t, pacedSource{&fakeSource{limit: 200}}, batcher.Policy{})
		ctx, cancel := context.WithCancel(t.Context())
		st, runDone := runSource(ctx, s)
		var got []string
		messages := 0
		for len(got) < 200 {
			m := <-st.out
			messages++
			got = append(got, positions(m)...)
			time.Sleep(5 * time.Millisecond)
			var acks []opencdc.Position
			for _, r := range m.Records {
				acks = append(acks, r.Position)
			}
			st.in <- pconnector.SourceRunRequest{AckPositions: acks}
		}
		is.Equal(got[199], "200")
		// About 5 records a message once the first is acked.
		if messages > 200/3 {
			t.Errorf("200 records came in %d messages, expected at most %d", messages, 200/3)
		}
		endSource(t, s, cancel, runDone)
	})
}

// TestSourceHoldsBackBriefly plays a host that acks the first message
// late and then no more until it has every record: records wait for its
// acks at most maxHoldBack, never for records to come.
func TestSourceHoldsBackBriefly(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		s := batchedSourceServer(t, pacedSource{&fakeSource{limit: 100}}, batcher.Policy{})
		ctx, cancel := context.WithCancel(t.Context())
		start := time.Now()
		st, runDone := runSource(ctx, s)
		first := <-st.out
		go func() {
			time.Sleep(50 * time.Millisecond) // a round trip longer than maxHoldBack
			st.in <- pconnector.SourceRunRequest{AckPositions: []opencdc.Position{first.Records[0].Position}}
		}()
		got := positions(first)
		for len(got) < 100 {
			m := <-st.out
			for _, p := range positions(m) {
				n, _ := strconv.Atoi(p)
				// Record n was read n ms after the start.
				if late := time.Since(start) - time.Duration(n)*time.Millisecond; late > maxHoldBack {
					t.Errorf("record %d sent %v after it was read, expected at most %v", n, late, maxHoldBack)
				}
				got = append(got, p)
			}
		}
		is.Equal(got[99], "100")
		endSource(t, s, cancel, runDone)
	})
}

// TestSourceRecordByRecordAcksHoldNothing plays Conduit's default engine,
// which takes every message at once and acks record by record, 5 ms after
// it took them: once it has acked a message of several records so,
// records go as they are read, none waiting for acks.
func TestSourceRecordByRecordAcksHoldNothing(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		s := batchedSourceServer(t, pacedSource{&fakeSource{limit: 100}}, batcher.Policy{})
		ctx, cancel := context.WithCancel(t.Context())
		start := time.Now()
		st, runDone := runSource(ctx, s)
		type due struct {
			at        time.Time
			positions []opencdc.Position
		}
		toAck := make(chan due, 100)
		ackerDone := make(chan struct{})
		go func() {
			defer close(ackerDone)
			for d := range toAck {
				time.Sleep(time.Until(d.at))
				for _, p := range d.positions {
					st.in <- pconnector.SourceRunRequest{AckPositions: []opencdc.Position{p}}
				}
			}
		}()
		var got []string
		for len(got) < 100 {
			m := <-st.out
			var ps []opencdc.Position
			for _, r := range m.Records {
				ps = append(ps, r.Position)
				n, _ := strconv.Atoi(string(r.Position))
				if late := time.Since(start) - time.Duration(n)*time.Millisecond; n > 20 && late > 0 {
					t.Errorf("record %d sent %v after it was read, expected at once", n, late)
				}
				got = append(got, string(r.Position))
			}
			toAck <- due{time.Now().Add(5 * time.Millisecond), ps}
		}
		close(toAck)
		<-ackerDone
		is.Equal(got[99], "100")
		endSource(t, s, cancel, runDone)
	})
}

// TestConduitAcksTellsHowMessagesAreAcked: a message of several records
// acked in one request means Conduit acks messages whole; one acked over
// several requests means it acks record by record; a message of one record
// tells neither.
func TestConduitAcksTellsHowMessagesAreAcked(t *testing.T) {
	tests := []struct {
		name     string
		sent     []int // message sizes
		requests []int // records per ack request
		want     bool
		unacked  int // messages not wholly acked after the requests
	}{
		{"nothing acked yet", []int{3}, nil, true, 1},
		{"whole", []int{3}, []int{3}, true, 0},
		{"record by record", []int{3}, []int{1, 1, 1}, false, 0},
		{"split in two", []int{3}, []int{2, 1}, false, 0},
		{"half acked", []int{3}, []int{2}, true, 1},
		{"one record tells nothing", []int{3, 1}, []int{1, 1, 1, 1}, false, 0},
		{"whole again after record by record", []int{2, 2}, []int{1, 1, 2}, true, 0},
		{"record by record after whole", []int{2, 2}, []int{2, 1, 1}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newConduitAcks()
			for _, n := range tt.sent {
				a.sent(n, time.Now())
			}
			for _, n := range tt.requests {
				a.acked(n)
			}
			unacked, byMessage, _ := a.state()
			if byMessage != tt.want {
				t.Errorf("byMessage = %v, want %v", byMessage, tt.want)
			}
			if unacked != tt.unacked {
				t.Errorf("%d messages not wholly acked, want %d", unacked, tt.unacked)
			}
		})
	}
}
