package plugin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/matryer/is"
)

// newTestDestinationServer returns a server configured and opened with dst.
func newTestDestinationServer(t *testing.T, dst testDestination) *destinationServer {
	return newBatchedDestinationServer(t, dst, batcher.Policy{})
}

// newBatchedDestinationServer returns a server configured and opened with
// dst and batching policy p.
func newBatchedDestinationServer(t *testing.T, dst testDestination, p batcher.Policy) *destinationServer {
	t.Helper()
	d := testDestinationServer(func(map[string]string) (Destination, error) {
		return destinationOf(dst, p, Retry{}), nil
	})
	if _, err := d.Configure(t.Context(), pconnector.DestinationConfigureRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Open(t.Context(), pconnector.DestinationOpenRequest{}); err != nil {
		t.Fatal(err)
	}
	return d
}

func runDestination(ctx context.Context, d *destinationServer) (destinationStream, <-chan error) {
	st := destinationStream{newStream[pconnector.DestinationRunRequest, pconnector.DestinationRunResponse](ctx)}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, st) }()
	return st, done
}

// ackTexts renders acks as "pos" for a positive ack and "pos!error" for a nack.
func ackTexts(resps ...pconnector.DestinationRunResponse) []string {
	var out []string
	for _, r := range resps {
		for _, a := range r.Acks {
			s := string(a.Position)
			if a.Error != "" {
				s += "!" + a.Error
			}
			out = append(out, s)
		}
	}
	return out
}

func TestDestinationLifecycle(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		dst := &fakeDestination{}
		d := newTestDestinationServer(t, dst)
		ctx, cancel := context.WithCancel(t.Context())
		st, runDone := runDestination(ctx, d)

		st.in <- pconnector.DestinationRunRequest{Records: records("1")}
		synctest.Wait() // written before the next message comes
		st.in <- pconnector.DestinationRunRequest{Records: records("2", "3")}
		is.Equal(ackTexts(<-st.out, <-st.out), []string{"1", "2", "3"})

		_, err := d.Stop(ctx, pconnector.DestinationStopRequest{LastPosition: opencdc.Position("3")})
		is.NoErr(err)
		cancel()
		is.NoErr(<-runDone)
		_, err = d.Teardown(t.Context(), pconnector.DestinationTeardownRequest{})
		is.NoErr(err)
		is.Equal(dst.written, []string{"1", "2", "3"})
		is.Equal(dst.calls, []string{"Open", "Teardown"})
	})
}

func TestDestinationStopWaitsForTheLastAck(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		release := make(chan struct{})
		dst := &fakeDestination{write: func(r []opencdc.Record) (int, error) {
			<-release
			return len(r), nil
		}}
		d := newTestDestinationServer(t, dst)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		st, runDone := runDestination(ctx, d)
		st.in <- pconnector.DestinationRunRequest{Records: records("1")}

		stopped := make(chan error, 1)
		go func() {
			_, err := d.Stop(ctx, pconnector.DestinationStopRequest{LastPosition: opencdc.Position("1")})
			stopped <- err
		}()
		synctest.Wait()
		is.Equal(len(stopped), 0) // Stop waits while the write is in flight
		close(release)
		synctest.Wait()
		is.Equal(len(stopped), 1)
		is.NoErr(<-stopped)
		is.Equal(ackTexts(<-st.out), []string{"1"})
		cancel()
		is.NoErr(<-runDone)
	})
}

func TestDestinationStopReturnsWhenRunEnds(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		d := newTestDestinationServer(t, &fakeDestination{})
		ctx, cancel := context.WithCancel(t.Context())
		_, runDone := runDestination(ctx, d)
		synctest.Wait()
		stopped := make(chan error, 1)
		go func() {
			// A position that never arrives: Stop must not hang once the stream is gone.
			_, err := d.Stop(t.Context(), pconnector.DestinationStopRequest{LastPosition: opencdc.Position("never")})
			stopped <- err
		}()
		synctest.Wait()
		is.Equal(len(stopped), 0)
		cancel()
		is.NoErr(<-runDone)
		is.NoErr(<-stopped)
	})
}

func TestDestinationWriteOutcomes(t *testing.T) {
	tests := []struct {
		name  string
		write func([]opencdc.Record) (int, error)
		want  []string // acks of the message "a", "b", "c", then of the message "d"
	}{
		{"success", nil, []string{"a", "b", "c", "d"}},
		{"fails at index 1", func(r []opencdc.Record) (int, error) {
			if len(r) == 3 {
				return 1, errors.New("constraint violated")
			}
			return len(r), nil
		}, []string{"a", `b!record at position "b": constraint violated`, `c!not attempted: the record at position "b" failed: constraint violated`, "d"}},
		{"panics", func(r []opencdc.Record) (int, error) {
			if len(r) == 3 {
				panic("write exploded")
			}
			return len(r), nil
		}, []string{"a!connector panicked in Write: write exploded", "b!connector panicked in Write: write exploded", "c!connector panicked in Write: write exploded", "d"}},
		// Write must not change its records; if it does, acks still name
		// the records Conduit sent.
		{"rewrites positions", func(r []opencdc.Record) (int, error) {
			for i := range r {
				r[i].Position = opencdc.Position("changed")
			}
			return len(r), nil
		}, []string{"a", "b", "c", "d"}},
		{"short write without error", func(r []opencdc.Record) (int, error) { return len(r) - 1, nil },
			[]string{"a", "b", "c!destination broke the Write contract: wrote 2 of 3 records but returned no error", "d!destination broke the Write contract: wrote 0 of 1 records but returned no error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakcheck.Check(t)
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				d := newTestDestinationServer(t, &fakeDestination{write: tt.write})
				ctx, cancel := context.WithCancel(t.Context())
				st, runDone := runDestination(ctx, d)
				st.in <- pconnector.DestinationRunRequest{Records: records("a", "b", "c")}
				synctest.Wait() // written alone, before the next message comes
				st.in <- pconnector.DestinationRunRequest{Records: records("d")}
				is.Equal(ackTexts(<-st.out, <-st.out), tt.want)
				cancel()
				is.NoErr(<-runDone)
			})
		})
	}
}

func TestDestinationTeardownWithoutOpen(t *testing.T) {
	is := is.New(t)
	dst := &fakeDestination{}
	d := testDestinationServer(func(map[string]string) (Destination, error) {
		return destinationOf(dst, batcher.Policy{}, Retry{}), nil
	})
	_, err := d.Teardown(t.Context(), pconnector.DestinationTeardownRequest{})
	is.NoErr(err) // never configured
	_, err = d.LifecycleOnDeleted(t.Context(), pconnector.DestinationLifecycleOnDeletedRequest{})
	is.NoErr(err)
	is.Equal(dst.calls, []string{"OnDeleted", "Teardown"}) // built for the hook, torn down after it
}

func TestDestinationNotADestination(t *testing.T) {
	is := is.New(t)
	d := newDestinationServer(testConnector{}, discard)
	_, err := d.Configure(t.Context(), pconnector.DestinationConfigureRequest{})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "not a destination"))
}
