package plugin

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/metrics"
)

// destinationServer serves one destination connector instance to Conduit.
//
// Its Run is an owner loop (see owner) with a reader that receives
// Conduit's messages and writers, the loop's flow, that call Write and
// send the acks in record order (see writers): whenever a Write may
// start, everything received so far, up to the batching limits, is
// written in one call (group commit). What
// has been received and not yet acked is bounded; while the bound is
// reached, the reader's messages wait in its inbox, Recv is not called
// once the inbox is full, and gRPC's flow control pushes back on Conduit.
//
// Stop asks the owner to write what it holds without waiting for a batch
// to fill, and returns once the last position Conduit sent has been acked.
// A Stop is never lost: one that arrives before Run has started waits for
// it, as Conduit may send Stop right behind the records it sent.
type destinationServer struct {
	instance[Destination]
	shutdown *shutdown       // Stop's and Teardown's: ends retries' waits, and at Teardown writes
	setProcs func(n int) int // runtime.GOMAXPROCS in a plugin process (see procs); nil: the process's setting is left alone
}

func newDestinationServer(c Factory, log *slog.Logger) *destinationServer {
	return &destinationServer{instance: newInstance[Destination]("destination", c, log), shutdown: newShutdown()}
}

func (d *destinationServer) Configure(_ context.Context, req pconnector.DestinationConfigureRequest) (pconnector.DestinationConfigureResponse, error) {
	return pconnector.DestinationConfigureResponse{}, d.configure(req.Config)
}

func (d *destinationServer) Open(ctx context.Context, _ pconnector.DestinationOpenRequest) (pconnector.DestinationOpenResponse, error) {
	return pconnector.DestinationOpenResponse{}, d.open(ctx, nil)
}

func (d *destinationServer) Run(ctx context.Context, stream pconnector.DestinationRunStream) error {
	return d.run(ctx, func(dst *Destination) (<-chan struct{}, error) { return nil, d.serve(ctx, dst, stream.Server()) })
}

// serve is Run's loop, with the reader and the writer. It returns once
// Conduit has closed the stream and what was received is written and
// acked, or once the stream or the writes end (Teardown).
func (d *destinationServer) serve(ctx context.Context, dst *Destination, stream pconnector.DestinationRunStreamServer) error {
	// Writes outlive the stream's context, keeping what it carries for
	// connector code, so that what was received is written and acked even
	// while Conduit closes the stream; Teardown cancels them. The loop
	// hands out nothing more once the stream ends, as acks can no longer
	// reach Conduit, or once Teardown is called.
	writeCtx, cancelWrites := context.WithCancel(metrics.NewContext(context.WithoutCancel(ctx), dst.Metrics.Set))
	defer cancelWrites()
	defer context.AfterFunc(d.shutdown.tornDown, cancelWrites)()
	loopCtx, endLoop := context.WithCancel(ctx)
	defer endLoop()
	defer context.AfterFunc(d.shutdown.tornDown, endLoop)()

	w := newWriters(writeCtx, outcomes{write: dst.Write, retry: dst.Retry, classify: dst.Classify, shutdown: d.shutdown, log: d.log, metrics: dst.Metrics.Set}, dst.Concurrency, dst.Metrics.Set, d.setProcs, func(acks []ack) error {
		return stream.Send(pconnector.DestinationRunResponse{Acks: acks})
	})
	// A Stop that came before Run drains from the start; a later one
	// reaches the owner through d.stops.
	o, err := newOwner(loopCtx, dst.Batch, dst.Metrics.Set, w, d.stops, d.shutdown.isStopping())
	if err != nil {
		w.close()
		return err
	}
	// The reader receives messages into the inbox, which the owner empties
	// only while there is room: once the inbox is full, Recv is not called
	// again until it has.
	quit := make(chan struct{})
	defer close(quit)
	go func() {
		for {
			req, err := stream.Recv()
			if err != nil {
				o.inbox.end(err)
				return
			}
			if len(req.Records) > 0 && !o.inbox.put(req.Records, quit) {
				return
			}
		}
	}()
	return o.run()
}

// Stop returns once the record at req.LastPosition has been written and
// acked (or nacked), once Run has ended, or when ctx is done or Teardown
// is called. From the call on, what the server holds is written without
// waiting for a batch to fill or for sdk.batch.delay. A Stop that arrives
// before Run has started waits for it; one without a position returns at
// once, as there is nothing to wait for.
func (d *destinationServer) Stop(ctx context.Context, req pconnector.DestinationStopRequest) (pconnector.DestinationStopResponse, error) {
	d.shutdown.Stop() // retries wait no more
	if len(req.LastPosition) == 0 {
		if d.hasRun() {
			_ = d.stop(ctx, nil) // the owner drains; nothing to wait for
		}
		return pconnector.DestinationStopResponse{}, nil
	}
	fail := func(what string, err error) (pconnector.DestinationStopResponse, error) {
		return pconnector.DestinationStopResponse{}, fmt.Errorf("stop destination: position %q %s: %w", req.LastPosition, what, err)
	}
	select {
	case <-d.started:
	case <-d.shutdown.aborted():
		return pconnector.DestinationStopResponse{}, nil
	case <-ctx.Done():
		return fail("was never acked, as Run never started", ctx.Err())
	}
	if err := d.stop(ctx, req.LastPosition); err != nil {
		return fail("was never acked", err)
	}
	return pconnector.DestinationStopResponse{}, nil
}

// Teardown cancels writes and retries still in progress (Stop has
// written and acked everything Conduit waits for; acks for anything else
// can no longer reach it), waits for Run to end and tears the connector
// down (see instance.teardown).
func (d *destinationServer) Teardown(ctx context.Context, _ pconnector.DestinationTeardownRequest) (pconnector.DestinationTeardownResponse, error) {
	return pconnector.DestinationTeardownResponse{}, d.teardown(ctx, d.shutdown.Abort)
}

// The lifecycle calls, made as for either role (see instance.lifecycle).
func (d *destinationServer) LifecycleOnCreated(ctx context.Context, req pconnector.DestinationLifecycleOnCreatedRequest) (pconnector.DestinationLifecycleOnCreatedResponse, error) {
	return pconnector.DestinationLifecycleOnCreatedResponse{}, d.lifecycle(ctx, req.Config, "OnCreated", func(c Calls) error { return c.created(ctx) })
}
func (d *destinationServer) LifecycleOnUpdated(ctx context.Context, req pconnector.DestinationLifecycleOnUpdatedRequest) (pconnector.DestinationLifecycleOnUpdatedResponse, error) {
	return pconnector.DestinationLifecycleOnUpdatedResponse{}, d.lifecycle(ctx, req.ConfigAfter, "OnUpdated", func(c Calls) error { return c.updated(ctx, req.ConfigBefore) })
}
func (d *destinationServer) LifecycleOnDeleted(ctx context.Context, req pconnector.DestinationLifecycleOnDeletedRequest) (pconnector.DestinationLifecycleOnDeletedResponse, error) {
	return pconnector.DestinationLifecycleOnDeletedResponse{}, d.lifecycle(ctx, req.Config, "OnDeleted", func(c Calls) error { return c.deleted(ctx) })
}
