package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// destinationServer serves one destination connector instance to Conduit.
// Run writes each message's records, in order, and answers with one ack per
// record; Stop waits until the last position Conduit sent has been acked.
type destinationServer struct {
	newDestination func(map[string]string) (Destination, error)
	log            *slog.Logger

	mu        sync.Mutex
	dst       Destination
	running   bool
	runDone   chan struct{} // closed when Run returns
	lastAcked opencdc.Position
	progress  chan struct{} // closed and replaced whenever lastAcked moves
}

func newDestinationServer(newDestination func(map[string]string) (Destination, error), log *slog.Logger) *destinationServer {
	return &destinationServer{newDestination: newDestination, log: log, progress: make(chan struct{})}
}

func (d *destinationServer) Configure(_ context.Context, req pconnector.DestinationConfigureRequest) (pconnector.DestinationConfigureResponse, error) {
	var dst Destination
	err := guard("Configure", func() (err error) {
		dst, err = d.newDestination(req.Config)
		return err
	})
	if err != nil {
		return pconnector.DestinationConfigureResponse{}, status.Error(codes.InvalidArgument, err.Error())
	}
	d.mu.Lock()
	d.dst = dst
	d.mu.Unlock()
	return pconnector.DestinationConfigureResponse{}, nil
}

func (d *destinationServer) destination() (Destination, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dst == nil {
		return nil, status.Error(codes.FailedPrecondition, "destination is not configured: Configure must succeed first")
	}
	return d.dst, nil
}

func (d *destinationServer) Open(ctx context.Context, _ pconnector.DestinationOpenRequest) (pconnector.DestinationOpenResponse, error) {
	dst, err := d.destination()
	if err != nil {
		return pconnector.DestinationOpenResponse{}, err
	}
	if err := guard("Open", func() error { return dst.Open(ctx) }); err != nil {
		return pconnector.DestinationOpenResponse{}, fmt.Errorf("open destination: %w", err)
	}
	return pconnector.DestinationOpenResponse{}, nil
}

func (d *destinationServer) Run(ctx context.Context, stream pconnector.DestinationRunStream) error {
	dst, err := d.destination()
	if err != nil {
		return err
	}
	d.mu.Lock()
	if d.running {
		d.mu.Unlock()
		return status.Error(codes.FailedPrecondition, "destination is already running")
	}
	d.running = true
	d.runDone = make(chan struct{})
	d.mu.Unlock()
	defer close(d.runDone)

	err = d.run(ctx, dst, stream.Server())
	if err == nil || errors.Is(err, io.EOF) || status.Code(err) == codes.Canceled || ctx.Err() != nil {
		return nil
	}
	d.log.Error("destination stopped with an error", "error", err)
	return err
}

func (d *destinationServer) run(ctx context.Context, dst Destination, stream pconnector.DestinationRunStreamServer) error {
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		if len(req.Records) == 0 {
			continue
		}
		var n int
		werr := guard("Write", func() (err error) {
			n, err = dst.Write(ctx, req.Records)
			return err
		})
		acks, nackErr := settle(req.Records, n, werr)
		switch {
		case nackErr != nil:
			k := countAcked(acks)
			d.log.Error("records not written", "position", string(req.Records[k].Position), "count", len(acks)-k, "error", nackErr)
		case werr != nil:
			d.log.Warn("Write wrote every record but returned an error", "error", werr)
		}
		if err := stream.Send(pconnector.DestinationRunResponse{Acks: acks}); err != nil {
			return fmt.Errorf("send acks to Conduit: %w", err)
		}
		d.advance(req.Records[len(req.Records)-1].Position)
	}
}

func countAcked(acks []pconnector.DestinationRunResponseAck) int {
	n := 0
	for n < len(acks) && acks[n].Error == "" {
		n++
	}
	return n
}

// advance records that every record up to pos has been acked or nacked.
func (d *destinationServer) advance(pos opencdc.Position) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lastAcked = pos
	close(d.progress)
	d.progress = make(chan struct{})
}

// Stop returns once the record at req.LastPosition has been acked (or
// nacked), once Run has ended, or when ctx is done.
func (d *destinationServer) Stop(ctx context.Context, req pconnector.DestinationStopRequest) (pconnector.DestinationStopResponse, error) {
	for {
		d.mu.Lock()
		done := len(req.LastPosition) == 0 || bytes.Equal(d.lastAcked, req.LastPosition) || !d.running
		progress, runDone := d.progress, d.runDone
		d.mu.Unlock()
		if done {
			return pconnector.DestinationStopResponse{}, nil
		}
		select {
		case <-progress:
		case <-runDone:
			return pconnector.DestinationStopResponse{}, nil
		case <-ctx.Done():
			return pconnector.DestinationStopResponse{}, fmt.Errorf("stop destination: position %q was never acked: %w", req.LastPosition, ctx.Err())
		}
	}
}

// Teardown waits for Run to end and tears the connector down. It works
// whether or not Configure, Open or Run ever happened.
func (d *destinationServer) Teardown(ctx context.Context, _ pconnector.DestinationTeardownRequest) (pconnector.DestinationTeardownResponse, error) {
	d.mu.Lock()
	dst, running, runDone := d.dst, d.running, d.runDone
	d.mu.Unlock()
	if running {
		select {
		case <-runDone:
		case <-ctx.Done():
			return pconnector.DestinationTeardownResponse{}, fmt.Errorf("teardown destination: Run did not end: %w", ctx.Err())
		}
	}
	if dst == nil {
		return pconnector.DestinationTeardownResponse{}, nil
	}
	if err := guard("Teardown", func() error { return dst.Teardown(ctx) }); err != nil {
		return pconnector.DestinationTeardownResponse{}, fmt.Errorf("teardown destination: %w", err)
	}
	return pconnector.DestinationTeardownResponse{}, nil
}

func (d *destinationServer) LifecycleOnCreated(ctx context.Context, req pconnector.DestinationLifecycleOnCreatedRequest) (pconnector.DestinationLifecycleOnCreatedResponse, error) {
	return pconnector.DestinationLifecycleOnCreatedResponse{}, d.lifecycle(ctx, req.Config, "OnCreated", func(c any) error {
		if h, ok := c.(createdHook); ok {
			return h.OnCreated(ctx)
		}
		return nil
	})
}

func (d *destinationServer) LifecycleOnUpdated(ctx context.Context, req pconnector.DestinationLifecycleOnUpdatedRequest) (pconnector.DestinationLifecycleOnUpdatedResponse, error) {
	return pconnector.DestinationLifecycleOnUpdatedResponse{}, d.lifecycle(ctx, req.ConfigAfter, "OnUpdated", func(c any) error {
		if h, ok := c.(updatedHook); ok {
			return h.OnUpdated(ctx, req.ConfigBefore)
		}
		return nil
	})
}

func (d *destinationServer) LifecycleOnDeleted(ctx context.Context, req pconnector.DestinationLifecycleOnDeletedRequest) (pconnector.DestinationLifecycleOnDeletedResponse, error) {
	return pconnector.DestinationLifecycleOnDeletedResponse{}, d.lifecycle(ctx, req.Config, "OnDeleted", func(c any) error {
		if h, ok := c.(deletedHook); ok {
			return h.OnDeleted(ctx)
		}
		return nil
	})
}

func (d *destinationServer) lifecycle(ctx context.Context, config map[string]string, call string, hook func(any) error) error {
	d.mu.Lock()
	dst := d.dst
	d.mu.Unlock()
	return runHook(ctx, d.log, call, dst, func() (any, error) { return d.newDestination(config) }, hook)
}
