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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func newTestSourceServer(src *fakeSource, configErr error) *sourceServer {
	return testSourceServer(func(cfg map[string]string) (Source, error) {
		if configErr != nil {
			return Source{}, configErr
		}
		return sourceOf(src, batcher.Policy{}), nil
	})
}

// runSource starts Run in the background and returns the stream and Run's
// result.
func runSource(ctx context.Context, s *sourceServer) (sourceStream, <-chan error) {
	st := sourceStream{newStream[pconnector.SourceRunRequest, pconnector.SourceRunResponse](ctx)}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, st) }()
	return st, done
}

func positions(resps ...pconnector.SourceRunResponse) []string {
	var out []string
	for _, r := range resps {
		for _, rec := range r.Records {
			out = append(out, string(rec.Position))
		}
	}
	return out
}

func TestSourceLifecycle(t *testing.T) {
	leakcheck.Check(t)
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		ctx, cancel := context.WithCancel(t.Context())
		src := &fakeSource{limit: 5}
		s := newTestSourceServer(src, nil)

		_, err := s.Configure(ctx, pconnector.SourceConfigureRequest{Config: map[string]string{"a": "b"}})
		is.NoErr(err)
		_, err = s.LifecycleOnCreated(ctx, pconnector.SourceLifecycleOnCreatedRequest{})
		is.NoErr(err)
		_, err = s.Open(ctx, pconnector.SourceOpenRequest{Position: opencdc.Position("2")})
		is.NoErr(err)
		is.Equal(string(src.opened), "2") // Open gets the position Conduit stored

		st, runDone := runSource(ctx, s)
		synctest.Wait()
		var sent []string
		for _, m := range messages(st) {
			sent = append(sent, m...)
		}
		is.Equal(sent, []string{"3", "4", "5"}) // as soon as they are read

		st.in <- pconnector.SourceRunRequest{AckPositions: []opencdc.Position{opencdc.Position("3")}}
		resp, err := s.Stop(ctx, pconnector.SourceStopRequest{})
		is.NoErr(err)
		is.Equal(string(resp.LastPosition), "5") // the last record sent

		// The stream stays open after Stop: remaining acks still arrive.
		st.in <- pconnector.SourceRunRequest{AckPositions: []opencdc.Position{opencdc.Position("4"), opencdc.Position("5")}}
		synctest.Wait()
		is.Equal(src.acked, []string{"3", "4", "5"})

		cancel() // Conduit closes the stream before Teardown
		is.NoErr(<-runDone)
		_, err = s.Teardown(t.Context(), pconnector.SourceTeardownRequest{})
		is.NoErr(err)
		is.Equal(src.calls, []string{"OnCreated", "Open", "Teardown"})
	})
}

func TestSourceStopBeforeRunAndTeardownWithoutOpen(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	src := &fakeSource{}
	s := newTestSourceServer(src, nil)
	resp, err := s.Stop(t.Context(), pconnector.SourceStopRequest{})
	is.NoErr(err)
	is.Equal(resp.LastPosition, nil)
	_, err = s.Teardown(t.Context(), pconnector.SourceTeardownRequest{}) // never configured
	is.NoErr(err)
	_, err = s.Configure(t.Context(), pconnector.SourceConfigureRequest{})
	is.NoErr(err)
	_, err = s.Teardown(t.Context(), pconnector.SourceTeardownRequest{}) // configured, never opened
	is.NoErr(err)
	is.True(src.torndown)
}

func TestSourceConfigureError(t *testing.T) {
	is := is.New(t)
	s := newTestSourceServer(nil, errors.New(`parameter "rate": got "x", expected a number`))
	_, err := s.Configure(t.Context(), pconnector.SourceConfigureRequest{})
	is.Equal(status.Code(err), codes.InvalidArgument)
	is.True(strings.Contains(err.Error(), `parameter "rate"`))
	_, err = s.Open(t.Context(), pconnector.SourceOpenRequest{})
	is.Equal(status.Code(err), codes.FailedPrecondition) // no Open without Configure
}

func TestSourceConfigurePanics(t *testing.T) {
	is := is.New(t)
	s := testSourceServer(func(map[string]string) (Source, error) { panic("bad config code") })
	_, err := s.Configure(t.Context(), pconnector.SourceConfigureRequest{})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "connector panicked in Configure: bad config code"))
}

func TestSourceRunFailures(t *testing.T) {
	tests := []struct {
		name string
		src  *fakeSource
		acks []string
		want string
	}{
		{"Read panics", &fakeSource{limit: 3, readPanic: true}, nil, "connector panicked in Read: read exploded"},
		{"record without position", &fakeSource{limit: 3, badPos: true}, nil, "without a position"},
		{"ack out of order", &fakeSource{limit: 2}, []string{"2"}, `ack for position "2", expected "1"`},
		{"ack for nothing sent", &fakeSource{limit: 0}, []string{"9"}, `ack for position "9", expected ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leakcheck.Check(t)
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				s := newTestSourceServer(tt.src, nil)
				_, err := s.Configure(t.Context(), pconnector.SourceConfigureRequest{})
				is.NoErr(err)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				st, runDone := runSource(ctx, s)
				for _, a := range tt.acks {
					synctest.Wait()
					st.in <- pconnector.SourceRunRequest{AckPositions: []opencdc.Position{opencdc.Position(a)}}
				}
				err = <-runDone
				is.True(err != nil)
				is.True(strings.Contains(err.Error(), tt.want))
				cancel()
				_, err = s.Teardown(t.Context(), pconnector.SourceTeardownRequest{})
				is.NoErr(err)
			})
		})
	}
}

func TestSourceLifecycleHooks(t *testing.T) {
	is := is.New(t)
	built := 0
	s := testSourceServer(func(cfg map[string]string) (Source, error) {
		built++
		if cfg["bad"] != "" {
			return Source{}, errors.New("does not parse")
		}
		return sourceOf(&fakeSource{}, batcher.Policy{}), nil
	})
	// Without Configure, hooks run on a connector built for the occasion.
	_, err := s.LifecycleOnCreated(t.Context(), pconnector.SourceLifecycleOnCreatedRequest{Config: map[string]string{}})
	is.NoErr(err)
	is.Equal(built, 1)
	// A configuration that does not parse is no reason to fail a deletion.
	_, err = s.LifecycleOnDeleted(t.Context(), pconnector.SourceLifecycleOnDeletedRequest{Config: map[string]string{"bad": "1"}})
	is.NoErr(err)
	// A connector without the hook is answered with success.
	_, err = s.LifecycleOnUpdated(t.Context(), pconnector.SourceLifecycleOnUpdatedRequest{})
	is.NoErr(err)
}
