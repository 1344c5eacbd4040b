package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"google.golang.org/grpc"
)

// orphanTeardown bounds the teardown of a plugin's connectors once its host
// is gone: whatever a connector has not released by then, the process's exit
// releases.
const orphanTeardown = 15 * time.Second

// liveConnectors keeps the source and destination servers a plugin process
// serves, and its gRPC server, so that they can be torn down and stopped
// when the host is gone.
type liveConnectors struct {
	mu        sync.Mutex
	teardowns []*teardownOnce
	server    *grpc.Server
}

// teardownOnce runs a connector server's Teardown for Conduit or for the
// plugin's own shutdown, one at a time, and not again once it succeeded:
// a host that tore a connector down and died before it ended the process
// must not have the connector torn down twice.
type teardownOnce struct {
	what     string // "source" or "destination"
	teardown func(context.Context) error
	turn     chan struct{}
	done     bool // guarded by turn
}

func (l *liveConnectors) add(what string, teardown func(context.Context) error) *teardownOnce {
	t := &teardownOnce{what: what, teardown: teardown, turn: make(chan struct{}, 1)}
	l.mu.Lock()
	l.teardowns = append(l.teardowns, t)
	l.mu.Unlock()
	return t
}

// run tears the connector down unless that succeeded before, waiting for a
// teardown in progress first, or for ctx.
func (t *teardownOnce) run(ctx context.Context) error {
	select {
	case t.turn <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("teardown %s: another teardown is still in progress: %w", t.what, ctx.Err())
	}
	defer func() { <-t.turn }()
	if t.done {
		return nil
	}
	err := t.teardown(ctx)
	t.done = err == nil
	return err
}

// source returns s as it is served, keeping track of it.
func (l *liveConnectors) source(s pconnector.SourcePlugin) pconnector.SourcePlugin {
	return liveSource{SourcePlugin: s, once: l.add("source", func(ctx context.Context) error {
		_, err := s.Teardown(ctx, pconnector.SourceTeardownRequest{})
		return err
	})}
}

// destination returns d as it is served, keeping track of it.
func (l *liveConnectors) destination(d pconnector.DestinationPlugin) pconnector.DestinationPlugin {
	return liveDestination{DestinationPlugin: d, once: l.add("destination", func(ctx context.Context) error {
		_, err := d.Teardown(ctx, pconnector.DestinationTeardownRequest{})
		return err
	})}
}

type liveSource struct {
	pconnector.SourcePlugin
	once *teardownOnce
}

func (s liveSource) Teardown(ctx context.Context, _ pconnector.SourceTeardownRequest) (pconnector.SourceTeardownResponse, error) {
	return pconnector.SourceTeardownResponse{}, s.once.run(ctx)
}

type liveDestination struct {
	pconnector.DestinationPlugin
	once *teardownOnce
}

func (d liveDestination) Teardown(ctx context.Context, _ pconnector.DestinationTeardownRequest) (pconnector.DestinationTeardownResponse, error) {
	return pconnector.DestinationTeardownResponse{}, d.once.run(ctx)
}

// grpcServer wraps newServer, go-plugin's constructor of the plugin's gRPC
// server, so that l knows the server it builds.
func (l *liveConnectors) grpcServer(newServer func([]grpc.ServerOption) *grpc.Server) func([]grpc.ServerOption) *grpc.Server {
	return func(opts []grpc.ServerOption) *grpc.Server {
		s := newServer(opts)
		l.mu.Lock()
		l.server = s
		l.mu.Unlock()
		return s
	}
}

// shutdown stops the gRPC server, which ends every call still in progress,
// and tears every connector down, all at once. It returns when ctx ends
// even if a connector's Teardown does not: the process is about to exit,
// and its exit releases what such a connector holds.
func (l *liveConnectors) shutdown(ctx context.Context) error {
	l.mu.Lock()
	server, teardowns := l.server, l.teardowns
	l.mu.Unlock()
	if server != nil {
		server.Stop()
	}
	errs := make(chan error, len(teardowns))
	for _, t := range teardowns {
		go func() { errs <- t.run(ctx) }()
	}
	var all []error
	for range teardowns {
		select {
		case err := <-errs:
			all = append(all, err)
		case <-ctx.Done():
			return errors.Join(append(all, fmt.Errorf("a connector's Teardown did not return: %w", ctx.Err()))...)
		}
	}
	return errors.Join(all...)
}

// untilHostGone waits until served returns what the plugin's server
// returned, or until hostGone says why the host is gone. In that case it
// logs the reason, stops the server and tears the connectors down within
// timeout, under ctx's values, and returns nil: the plugin's work is over.
func untilHostGone(ctx context.Context, served <-chan error, hostGone <-chan string, live *liveConnectors, log *slog.Logger, timeout time.Duration) error {
	var why string
	select {
	case err := <-served:
		return err
	case why = <-hostGone:
	}
	log.Warn("the plugin's host is gone: tearing down its connectors and exiting", "reason", why)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := live.shutdown(ctx); err != nil {
		log.Warn("tearing down after the host was gone failed; exiting anyway", "error", err)
		return nil
	}
	log.Info("connectors torn down after the host was gone")
	return nil
}
