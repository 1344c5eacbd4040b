package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"
)

// orphanTeardown bounds the teardown of a plugin's connectors once its host
// is gone: whatever a connector has not released by then, the process's exit
// releases.
const orphanTeardown = 15 * time.Second

// liveConnectors keeps the teardowns of the connector instances a plugin
// process serves, and its gRPC server, so that they can be torn down and
// stopped when the host is gone. An instance's teardown tears its
// connector down once, however often it is called (see instance.teardown).
type liveConnectors struct {
	mu        sync.Mutex
	teardowns []func(context.Context) error
	server    *grpc.Server
}

// source returns s, keeping its teardown.
func (l *liveConnectors) source(s *sourceServer) *sourceServer {
	l.add(func(ctx context.Context) error { return s.teardown(ctx, s.stopReading) })
	return s
}

// destination returns d, keeping its teardown.
func (l *liveConnectors) destination(d *destinationServer) *destinationServer {
	l.add(func(ctx context.Context) error { return d.teardown(ctx, d.shutdown.Abort) })
	return d
}

func (l *liveConnectors) add(teardown func(context.Context) error) {
	l.mu.Lock()
	l.teardowns = append(l.teardowns, teardown)
	l.mu.Unlock()
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
	for _, teardown := range teardowns {
		go func() { errs <- teardown(ctx) }()
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
