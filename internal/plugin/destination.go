package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/middleware"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// destinationServer serves one destination connector instance to Conduit.
//
// Run is one owner loop (see flow.go) with a reader that receives Conduit's
// messages and a writer that calls Write and sends the acks: whenever the
// writer is free, everything received so far, up to the batching limits,
// is written in one call (group commit). What has been received and not
// yet acked is bounded; while the bound is reached, the reader's messages
// wait, Recv is not called, and gRPC's flow control pushes back on Conduit.
// Stop asks the owner to write what it holds without waiting for a batch to
// fill, and returns once the last position Conduit sent has been acked.
type destinationServer struct {
	newDestination func(map[string]string) (Destination, DestinationPolicy, error)
	log            *slog.Logger
	halt           *retryHalt // ends retries on Stop and Teardown

	mu           sync.Mutex
	dst          *destination
	running      bool
	runDone      chan struct{}      // closed when Run returns
	stops        chan stopRequest   // Stop's requests to the running owner loop
	cancelWrites context.CancelFunc // ends the writes' context
}

// stopRequest asks the owner loop to write without waiting and to close
// done once the record at last has been acked (or nacked).
type stopRequest struct {
	last opencdc.Position
	done chan struct{}
}

func newDestinationServer(newDestination func(map[string]string) (Destination, DestinationPolicy, error), log *slog.Logger) *destinationServer {
	return &destinationServer{newDestination: newDestination, log: log, halt: newRetryHalt()}
}

func (d *destinationServer) Configure(_ context.Context, req pconnector.DestinationConfigureRequest) (pconnector.DestinationConfigureResponse, error) {
	var dst Destination
	var policy DestinationPolicy
	err := guard("Configure", func() (err error) {
		dst, policy, err = d.newDestination(req.Config)
		return err
	})
	if err != nil {
		return pconnector.DestinationConfigureResponse{}, status.Error(codes.InvalidArgument, err.Error())
	}
	d.mu.Lock()
	d.dst = &destination{Destination: dst, batch: policy.Batch, retry: policy.Retry}
	d.mu.Unlock()
	return pconnector.DestinationConfigureResponse{}, nil
}

func (d *destinationServer) destination() (*destination, error) {
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
	in, err := batcher.New(dst.batch, holdFor(dst.batch), recordSize)
	if err != nil {
		return err
	}
	// Writes outlive the stream's context so that what was received is
	// written and acked even while Conduit closes the stream; Teardown
	// cancels them.
	writeCtx, cancelWrites := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWrites()
	stops := make(chan stopRequest)
	d.mu.Lock()
	if d.running {
		d.mu.Unlock()
		return status.Error(codes.FailedPrecondition, "destination is already running")
	}
	d.running = true
	d.runDone = make(chan struct{})
	d.stops, d.cancelWrites = stops, cancelWrites
	d.mu.Unlock()
	defer close(d.runDone)

	f := &destinationFlow{
		server: d, dst: dst, stream: stream.Server(), in: in,
		ctx: ctx, writeCtx: writeCtx, stops: stops,
	}
	err = f.run()
	if err == nil || errors.Is(err, io.EOF) || status.Code(err) == codes.Canceled || ctx.Err() != nil {
		return nil
	}
	d.log.Error("destination stopped with an error", "error", err)
	return err
}

// write writes records and sends one ack per record (see [outcomes]).
func (d *destinationServer) write(ctx context.Context, dst *destination, stream pconnector.DestinationRunStreamServer, records []opencdc.Record) error {
	return outcomes{write: dst.Write, retry: dst.retry, halt: d.halt, log: d.log, send: func(acks []pconnector.DestinationRunResponseAck) error {
		if err := stream.Send(pconnector.DestinationRunResponse{Acks: acks}); err != nil {
			return fmt.Errorf("send acks to Conduit: %w", err)
		}
		return nil
	}}.writeAll(ctx, records)
}

// Stop returns once the record at req.LastPosition has been written and
// acked (or nacked), once Run has ended, or when ctx is done. From the call
// on, what the server holds is written without waiting for a batch to fill
// or for sdk.batch.delay.
func (d *destinationServer) Stop(ctx context.Context, req pconnector.DestinationStopRequest) (pconnector.DestinationStopResponse, error) {
	d.halt.Stop()
	d.mu.Lock()
	running, stops, runDone := d.running, d.stops, d.runDone
	d.mu.Unlock()
	if !running {
		return pconnector.DestinationStopResponse{}, nil
	}
	r := stopRequest{last: req.LastPosition, done: make(chan struct{})}
	select {
	case stops <- r:
	case <-runDone:
		return pconnector.DestinationStopResponse{}, nil
	case <-ctx.Done():
		return pconnector.DestinationStopResponse{}, fmt.Errorf("stop destination: %w", ctx.Err())
	}
	select {
	case <-r.done:
		return pconnector.DestinationStopResponse{}, nil
	case <-runDone:
		return pconnector.DestinationStopResponse{}, nil
	case <-ctx.Done():
		return pconnector.DestinationStopResponse{}, fmt.Errorf("stop destination: position %q was never acked: %w", req.LastPosition, ctx.Err())
	}
}

// Teardown cancels writes still in progress (Stop has written and acked
// everything Conduit waits for; acks for anything else can no longer reach
// it), waits for Run to end and tears the connector down. It works whether
// or not Configure, Open or Run ever happened.
func (d *destinationServer) Teardown(ctx context.Context, _ pconnector.DestinationTeardownRequest) (pconnector.DestinationTeardownResponse, error) {
	d.mu.Lock()
	dst, running, runDone, cancelWrites := d.dst, d.running, d.runDone, d.cancelWrites
	d.mu.Unlock()
	d.halt.Abort()
	if cancelWrites != nil {
		cancelWrites()
	}
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
		if h, ok := middleware.Find[middleware.CreatedHook](c); ok {
			return h.OnCreated(ctx)
		}
		return nil
	})
}

func (d *destinationServer) LifecycleOnUpdated(ctx context.Context, req pconnector.DestinationLifecycleOnUpdatedRequest) (pconnector.DestinationLifecycleOnUpdatedResponse, error) {
	return pconnector.DestinationLifecycleOnUpdatedResponse{}, d.lifecycle(ctx, req.ConfigAfter, "OnUpdated", func(c any) error {
		if h, ok := middleware.Find[middleware.UpdatedHook](c); ok {
			return h.OnUpdated(ctx, req.ConfigBefore)
		}
		return nil
	})
}

func (d *destinationServer) LifecycleOnDeleted(ctx context.Context, req pconnector.DestinationLifecycleOnDeletedRequest) (pconnector.DestinationLifecycleOnDeletedResponse, error) {
	return pconnector.DestinationLifecycleOnDeletedResponse{}, d.lifecycle(ctx, req.Config, "OnDeleted", func(c any) error {
		if h, ok := middleware.Find[middleware.DeletedHook](c); ok {
			return h.OnDeleted(ctx)
		}
		return nil
	})
}

func (d *destinationServer) lifecycle(ctx context.Context, config map[string]string, call string, hook func(any) error) error {
	d.mu.Lock()
	var configured any
	if d.dst != nil {
		configured = d.dst.Destination
	}
	d.mu.Unlock()
	return runHook(ctx, d.log, call, configured, func() (any, error) {
		dst, _, err := d.newDestination(config)
		return dst, err
	}, hook)
}
