package plugin

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/matryer/is"
)

// hostDeath is a plugin's server state with a running source and a
// configured destination, as Conduit leaves it when it dies.
type hostDeath struct {
	live   *liveConnectors
	src    *fakeSource
	dst    *fakeDestination
	source pconnector.SourcePlugin
	run    *sourceRun // its cancel is the connection's end, as gRPC cancels a stream
}

func newHostDeath(t *testing.T, src *fakeSource) *hostDeath {
	t.Helper()
	h := &hostDeath{live: &liveConnectors{}, src: src, dst: &fakeDestination{}}
	ss := sourceServerOf(src, batcher.Policy{})
	h.source = h.live.source(ss)
	dest := h.live.destination(destinationServerOf(h.dst, batcher.Policy{}, Retry{}))
	ctx := t.Context()
	if _, err := h.source.Configure(ctx, pconnector.SourceConfigureRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.source.Open(ctx, pconnector.SourceOpenRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dest.Configure(ctx, pconnector.DestinationConfigureRequest{}); err != nil {
		t.Fatal(err)
	}
	h.run = newSourceRun(t, ss).run()
	return h
}

// When the host is gone, the plugin says why at warn and tears down every
// connector it serves, running or not.
func TestHostGoneTearsDown(t *testing.T) {
	inBubble(t, func(t *testing.T, is *is.I) {
		h := newHostDeath(t, &fakeSource{limit: 3})
		var logs bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&logs, nil))
		hostGone := make(chan string, 1)
		hostGone <- "the host died"
		h.run.cancel()
		err := untilHostGone(t.Context(), make(chan error), hostGone, h.live, log, time.Minute)
		is.NoErr(err)
		is.NoErr(h.run.wait())
		is.Equal(h.src.count("Teardown"), 1)
		h.dst.mu.Lock()
		is.True(h.dst.torndown)
		h.dst.mu.Unlock()
		is.True(strings.Contains(logs.String(), `"level":"WARN","msg":"the plugin's host is gone: tearing down its connectors and exiting","reason":"the host died"`))
	})
}

// A connector the host tore down before it died is not torn down again.
func TestHostGoneAfterTeardown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		h := newHostDeath(t, &fakeSource{limit: 3})
		h.run.cancel()
		_, err := h.source.Teardown(t.Context(), pconnector.SourceTeardownRequest{})
		is.NoErr(err)
		hostGone := make(chan string, 1)
		hostGone <- "gone"
		is.NoErr(untilHostGone(t.Context(), make(chan error), hostGone, h.live, discard, time.Minute))
		is.Equal(h.src.count("Teardown"), 1)
	})
}

// blockingSource is a source whose Teardown ignores its context until
// released.
type blockingSource struct {
	*fakeSource
	release chan struct{}
}

func (s blockingSource) Teardown(context.Context) error {
	<-s.release
	return nil
}

// A Teardown that does not return does not keep an orphan alive: the
// shutdown ends at its deadline.
func TestHostGoneTeardownBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		release := make(chan struct{})
		live := &liveConnectors{}
		src := live.source(sourceServerOf(blockingSource{&fakeSource{}, release}, batcher.Policy{}))
		_, err := src.Configure(t.Context(), pconnector.SourceConfigureRequest{})
		is.NoErr(err)
		var logs bytes.Buffer
		hostGone := make(chan string, 1)
		hostGone <- "gone"
		start := time.Now()
		is.NoErr(untilHostGone(t.Context(), make(chan error), hostGone, live, slog.New(slog.NewJSONHandler(&logs, nil)), 15*time.Second))
		is.Equal(time.Since(start), 15*time.Second) // virtual time: exactly the bound
		is.True(strings.Contains(logs.String(), "a connector's Teardown did not return"))
		close(release)
	})
}

// While the host lives, the plugin's end is its server's.
func TestServedEndsFirst(t *testing.T) {
	is := is.New(t)
	served := make(chan error, 1)
	boom := errors.New("boom")
	served <- boom
	is.Equal(untilHostGone(t.Context(), served, make(chan string), &liveConnectors{}, discard, time.Minute), boom)
}
