package plugin

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/matryer/is"
)

// ctxDestination's Write waits for its context, like a write stuck on a
// lock or a dead connection.
type ctxDestination struct {
	fakeDestination
	started   chan struct{}
	cancelled atomic.Bool
}

func (d *ctxDestination) Write(ctx context.Context, r []opencdc.Record) (int, error) {
	close(d.started)
	<-ctx.Done()
	d.cancelled.Store(true)
	return 0, ctx.Err()
}

// TestTeardownCancelsBatchedWrites: a batched Write still running when
// Conduit closes the stream and tears down gets its context cancelled, so
// Run ends and the connector is torn down.
func TestTeardownCancelsBatchedWrites(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		dst := &ctxDestination{started: make(chan struct{})}
		d := newBatchedDestinationServer(t, dst, batcher.Policy{Count: 1})
		ctx, cancel := context.WithCancel(t.Context())
		st, runDone := runDestination(ctx, d)
		st.in <- pconnector.DestinationRunRequest{Records: records("1")}
		<-dst.started
		cancel()
		tctx, tcancel := context.WithTimeout(t.Context(), time.Second)
		defer tcancel()
		_, err := d.Teardown(tctx, pconnector.DestinationTeardownRequest{})
		is.NoErr(err)
		is.True(dst.cancelled.Load())
		is.True(dst.torndown)
		is.NoErr(<-runDone)
	})
}

type dbError struct{ msg string }

func (e *dbError) Error() string { return e.msg } // panics on a nil *dbError

// TestErrorMethodThatPanics: a Write returning a typed nil error, whose
// Error method panics, has its records nacked, and the plugin goes on.
func TestErrorMethodThatPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		var typedNil *dbError
		d := newTestDestinationServer(t, &fakeDestination{write: func(r []opencdc.Record) (int, error) {
			if string(r[0].Position) == "1" {
				return 0, typedNil
			}
			return len(r), nil
		}})
		ctx, cancel := context.WithCancel(t.Context())
		st, runDone := runDestination(ctx, d)
		st.in <- pconnector.DestinationRunRequest{Records: records("1")}
		synctest.Wait() // written alone, before the next message comes
		st.in <- pconnector.DestinationRunRequest{Records: records("2")}
		acks := ackTexts(<-st.out, <-st.out)
		is.True(strings.HasPrefix(acks[0], "1!connector panicked in Write")) // the Error method's panic
		is.Equal(acks[1], "2")
		cancel()
		is.NoErr(<-runDone)
	})
}

// lateSource returns a record together with the cancellation of its read,
// which the server promises to pass on.
type lateSource struct {
	fakeSource
	n atomic.Int64
}

func (s *lateSource) ReadBatch(ctx context.Context, _ int) ([]opencdc.Record, error) {
	<-ctx.Done()
	return []opencdc.Record{{Position: opencdc.Position(strconv.FormatInt(s.n.Add(1), 10))}}, ctx.Err()
}

// TestStopRightAfterRunStarts: a Stop racing Run's start still sends the
// record it reports as the last one.
func TestStopRightAfterRunStarts(t *testing.T) {
	for range 200 {
		s := batchedSourceServer(t, &lateSource{}, batcher.Policy{Count: 10})
		ctx, cancel := context.WithCancel(t.Context())
		st, runDone := runSource(ctx, s)
		for {
			s.readMu.Lock()
			started := s.stopRead != nil
			s.readMu.Unlock()
			if started {
				break
			}
			runtime.Gosched()
		}
		resp, err := s.Stop(ctx, pconnector.SourceStopRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if sent := messages(st); len(resp.LastPosition) > 0 && len(sent) == 0 {
			t.Fatalf("Stop returned position %q, which was never sent", resp.LastPosition)
		}
		cancel()
		<-runDone
		if _, err := s.Teardown(t.Context(), pconnector.SourceTeardownRequest{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSourceRunFailingEarly: a Run that fails before reading leaves Stop and
// Teardown working.
func TestSourceRunFailingEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		src := &fakeSource{limit: 1}
		s := batchedSourceServer(t, src, batcher.Policy{Count: -1}) // only possible from code
		_, runDone := runSource(t.Context(), s)
		is.True(<-runDone != nil)
		_, err := s.Stop(t.Context(), pconnector.SourceStopRequest{})
		is.NoErr(err)
		_, err = s.Teardown(t.Context(), pconnector.SourceTeardownRequest{})
		is.NoErr(err)
		is.True(src.torndown)
	})
}
