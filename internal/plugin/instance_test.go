package plugin

import (
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

// The calls every connector has, made the same way for both roles:
// Configure, Open, Teardown and the lifecycle hooks.

// TestSourceConfigureFails: a configuration the connector refuses, or
// panics on, is an InvalidArgument that says why, and Open cannot follow.
func TestSourceConfigureFails(t *testing.T) {
	tests := []struct {
		name      string
		configure func(map[string]string) (Source, error)
		want      string
	}{
		{"an error", func(map[string]string) (Source, error) {
			return Source{}, errors.New(`parameter "rate": got "x", expected a number`)
		}, `parameter "rate"`},
		{"a panic", func(map[string]string) (Source, error) { panic("bad config code") }, "connector panicked in Configure: bad config code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			s := testSourceServer(tt.configure)
			_, err := s.Configure(t.Context(), pconnector.SourceConfigureRequest{})
			is.Equal(status.Code(err), codes.InvalidArgument)
			is.True(strings.Contains(err.Error(), tt.want))
			_, err = s.Open(t.Context(), pconnector.SourceOpenRequest{})
			is.Equal(status.Code(err), codes.FailedPrecondition) // no Open without Configure
		})
	}
}

// TestDestinationNotADestination: a plugin that is no destination refuses
// to configure one.
func TestDestinationNotADestination(t *testing.T) {
	is := is.New(t)
	d := newDestinationServer(testFactory{}, discard)
	_, err := d.Configure(t.Context(), pconnector.DestinationConfigureRequest{})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "not a destination"))
}

// TestSourceStopBeforeRunAndTeardownWithoutOpen: Stop before Run reports
// no position, and Teardown succeeds whether or not Configure happened,
// tearing down a connector configured and never opened.
func TestSourceStopBeforeRunAndTeardownWithoutOpen(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	src := &fakeSource{}
	s := sourceServerOf(src, batcher.Policy{})
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

// TestDestinationTeardownWithoutOpen: Teardown of a destination never
// configured succeeds, and a lifecycle hook then runs on a connector built
// for it and torn down after it.
func TestDestinationTeardownWithoutOpen(t *testing.T) {
	is := is.New(t)
	dst := &fakeDestination{}
	d := destinationServerOf(dst, batcher.Policy{}, Retry{})
	_, err := d.Teardown(t.Context(), pconnector.DestinationTeardownRequest{})
	is.NoErr(err) // never configured
	_, err = d.LifecycleOnDeleted(t.Context(), pconnector.DestinationLifecycleOnDeletedRequest{})
	is.NoErr(err)
	is.Equal(dst.calls, []string{"OnDeleted", "Teardown"}) // built for the hook, torn down after it
}

// TestSourceLifecycleHooks: without Configure, a hook runs on a connector
// built for the occasion; a configuration that does not parse, or a
// connector without the hook, is answered with success.
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

// TestDestinationLifecycle runs a destination as Conduit does: records
// come in messages and are acked in order, Stop returns once the last is
// acked, and Teardown follows Open.
func TestDestinationLifecycle(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		dst := &fakeDestination{}
		r := newDestinationRun(t, openDestination(t, dst, batcher.Policy{}, Retry{})).run()

		r.sendRecords(records("1")...)
		synctest.Wait() // written before the next message comes
		r.sendRecords(records("2", "3")...)
		is.Equal(ackTexts(<-r.st.out, <-r.st.out), []string{"1", "2", "3"})

		_, err := r.d.Stop(t.Context(), pconnector.DestinationStopRequest{LastPosition: opencdc.Position("3")})
		is.NoErr(err)
		r.end()
		is.Equal(dst.written, []string{"1", "2", "3"})
		is.Equal(dst.calls, []string{"Open", "Teardown"})
	})
}

// TestSourceLifecycle runs a source as Conduit does: Open from the position
// Conduit stored, records sent as soon as they are read, Stop reporting the
// last one sent, acks passed to the connector also after Stop, and
// Teardown once Conduit closed the stream.
func TestSourceLifecycle(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		ctx := t.Context()
		src := &fakeSource{limit: 5}
		s := sourceServerOf(src, batcher.Policy{})

		_, err := s.Configure(ctx, pconnector.SourceConfigureRequest{Config: map[string]string{"a": "b"}})
		is.NoErr(err)
		_, err = s.LifecycleOnCreated(ctx, pconnector.SourceLifecycleOnCreatedRequest{})
		is.NoErr(err)
		_, err = s.Open(ctx, pconnector.SourceOpenRequest{Position: opencdc.Position("2")})
		is.NoErr(err)
		is.Equal(string(src.opened), "2") // Open gets the position Conduit stored

		r := newSourceRun(t, s).run()
		synctest.Wait()
		var sent []string
		for _, m := range r.sent() {
			sent = append(sent, m...)
		}
		is.Equal(sent, []string{"3", "4", "5"}) // as soon as they are read

		r.ack("3")
		last, err := r.stop()
		is.NoErr(err)
		is.Equal(last, "5") // the last record sent

		// The stream stays open after Stop: remaining acks still arrive.
		r.ack("4", "5")
		synctest.Wait()
		is.Equal(src.acked, []string{"3", "4", "5"})

		r.end() // Conduit closes the stream before Teardown
		is.Equal(src.calls, []string{"OnCreated", "Open", "Teardown"})
	})
}
