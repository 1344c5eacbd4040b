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
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/middleware"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// destinationServer serves one destination connector instance to Conduit.
// Run writes records in order, one Write per message or in batches under the
// destination's batching policy, and answers with one ack per record; Stop
// waits until the last position Conduit sent has been acked.
type destinationServer struct {
	newDestination func(map[string]string) (Destination, DestinationPolicy, error)
	log            *slog.Logger
	halt           *retryHalt // ends retries on Stop and Teardown

	mu           sync.Mutex
	dst          *destination
	running      bool
	runDone      chan struct{}                    // closed when Run returns
	in           *batcher.Batcher[opencdc.Record] // collects records into batches; nil without batching
	cancelWrites context.CancelFunc               // ends the batched writes' context
	lastReceived opencdc.Position
	stopAt       opencdc.Position // the position Stop waits for
	lastAcked    opencdc.Position
	progress     chan struct{} // closed and replaced whenever lastAcked moves
}

func newDestinationServer(newDestination func(map[string]string) (Destination, DestinationPolicy, error), log *slog.Logger) *destinationServer {
	return &destinationServer{newDestination: newDestination, log: log, halt: newRetryHalt(), progress: make(chan struct{})}
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
	d.mu.Lock()
	if d.running {
		d.mu.Unlock()
		return status.Error(codes.FailedPrecondition, "destination is already running")
	}
	d.running = true
	d.runDone = make(chan struct{})
	d.mu.Unlock()
	defer close(d.runDone)

	if dst.batch != (batcher.Policy{}) {
		err = d.runBatched(ctx, dst, stream.Server(), dst.batch)
	} else {
		err = d.run(ctx, dst, stream.Server())
	}
	if err == nil || errors.Is(err, io.EOF) || status.Code(err) == codes.Canceled || ctx.Err() != nil {
		return nil
	}
	d.log.Error("destination stopped with an error", "error", err)
	return err
}

// run writes each message's records with one Write, as they arrive.
func (d *destinationServer) run(ctx context.Context, dst Destination, stream pconnector.DestinationRunStreamServer) error {
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		if len(req.Records) == 0 {
			continue
		}
		if err := d.write(ctx, dst, stream, req.Records); err != nil {
			return err
		}
	}
}

// runBatched collects records across messages and writes them in batches
// under policy, collecting the next batch while one is written.
func (d *destinationServer) runBatched(ctx context.Context, dst Destination, stream pconnector.DestinationRunStreamServer, policy batcher.Policy) error {
	// Writes outlive the stream's context so that what was received is
	// written even while Conduit closes the stream; Teardown cancels them.
	writeCtx, cancelWrites := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWrites()
	in, err := batcher.New(policy, recordSize, func(_ context.Context, batch []opencdc.Record, _ batcher.Reason) error {
		return d.write(writeCtx, dst, stream, batch)
	})
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.in, d.cancelWrites = in, cancelWrites
	d.mu.Unlock()
	defer func() {
		if err := in.Close(writeCtx); err != nil && ctx.Err() == nil {
			d.log.Error("records received but not acknowledged", "error", err)
		}
	}()
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		for _, rec := range req.Records {
			if err := in.Add(ctx, rec); err != nil {
				return err
			}
		}
		if len(req.Records) == 0 {
			continue
		}
		// Stop may be waiting for the record just received: write it now.
		d.mu.Lock()
		d.lastReceived = req.Records[len(req.Records)-1].Position
		stopping := d.stopAt != nil && bytes.Equal(d.stopAt, d.lastReceived)
		d.mu.Unlock()
		if stopping {
			if err := in.Flush(ctx); err != nil {
				return err
			}
		}
	}
}

// write writes records and sends one ack per record (see [outcomes]).
func (d *destinationServer) write(ctx context.Context, dst Destination, stream pconnector.DestinationRunStreamServer, records []opencdc.Record) error {
	return outcomes{write: dst.Write, retry: d.retryPolicy(), halt: d.halt, log: d.log, send: func(acks []pconnector.DestinationRunResponseAck) error {
		if err := stream.Send(pconnector.DestinationRunResponse{Acks: acks}); err != nil {
			return fmt.Errorf("send acks to Conduit: %w", err)
		}
		d.advance(acks[len(acks)-1].Position)
		return nil
	}}.writeAll(ctx, records)
}

// advance records that every record up to pos has been acked or nacked.
func (d *destinationServer) advance(pos opencdc.Position) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lastAcked = pos
	close(d.progress)
	d.progress = make(chan struct{})
}

// Stop returns once the record at req.LastPosition has been written and
// acked (or nacked), once Run has ended, or when ctx is done. With batching,
// it writes the batch that record is in without waiting for it to fill.
func (d *destinationServer) Stop(ctx context.Context, req pconnector.DestinationStopRequest) (pconnector.DestinationStopResponse, error) {
	d.halt.Stop()
	d.mu.Lock()
	d.stopAt = req.LastPosition
	in, received := d.in, len(req.LastPosition) > 0 && bytes.Equal(d.lastReceived, req.LastPosition)
	d.mu.Unlock()
	if in != nil && received {
		if err := in.Flush(ctx); err != nil {
			return pconnector.DestinationStopResponse{}, fmt.Errorf("stop destination: %w", err)
		}
	}
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
