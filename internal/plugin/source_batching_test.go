package plugin

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/matryer/is"
)

func batchedSourceServer(t *testing.T, src testSource, p batcher.Policy) *sourceServer {
	t.Helper()
	s := newSourceServer(func(map[string]string) (Source, error) { return sourceOf(src, p), nil }, discard)
	if _, err := s.Configure(t.Context(), pconnector.SourceConfigureRequest{}); err != nil {
		t.Fatal(err)
	}
	return s
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
		cancel()
		is.NoErr(<-runDone)
		_, err := s.Teardown(t.Context(), pconnector.SourceTeardownRequest{})
		is.NoErr(err)
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
		cancel()
		is.NoErr(<-runDone)
		_, err = s.Teardown(t.Context(), pconnector.SourceTeardownRequest{})
		is.NoErr(err)
	})
}
