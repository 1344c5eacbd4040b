package plugin

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/matryer/is"
)

func batchedSourceServer(t *testing.T, src Source, p batcher.Policy) *sourceServer {
	t.Helper()
	s := newSourceServer(func(map[string]string) (Source, batcher.Policy, error) { return src, p, nil }, discard)
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

func TestSourceBatching(t *testing.T) {
	tests := []struct {
		name     string
		policy   batcher.Policy
		limit    int // records the source has
		wantRun  [][]string
		wantStop [][]string // what Stop sends
	}{
		{"size", batcher.Policy{Count: 2}, 5, [][]string{{"1", "2"}, {"3", "4"}}, [][]string{{"5"}}},
		{"delay sends a partial batch while Read waits", batcher.Policy{Count: 10, Delay: time.Second}, 3, [][]string{{"1", "2", "3"}}, nil},
		{"bytes", batcher.Policy{Bytes: 2}, 4, [][]string{{"1", "2"}, {"3", "4"}}, nil}, // positions are the bytes here
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
					var src Source = fake
					bs := &batchSource{fakeSource: fake}
					if batchRead {
						src = bs
					}
					s := batchedSourceServer(t, src, tt.policy)
					ctx, cancel := context.WithCancel(t.Context())
					st, runDone := runSource(ctx, s)
					time.Sleep(2 * time.Second)
					synctest.Wait()
					is.Equal(messages(st), tt.wantRun)
					resp, err := s.Stop(t.Context(), pconnector.SourceStopRequest{})
					is.NoErr(err)
					is.Equal(messages(st), tt.wantStop)
					is.Equal(string(resp.LastPosition), string(rune('0'+tt.limit)))
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
