package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	connectorv2 "github.com/conduitio/conduit-connector-protocol/proto/connector/v2"
	"github.com/connkit/connkit/internal/wire"
	"google.golang.org/grpc"
)

// Pipeline moves records from an opened source to an opened destination the
// way Conduit's engines do: records are forwarded without waiting for acks,
// acks must come back in order, and each destination ack is passed to the
// source. A nack fails the pipeline, as with Conduit's default dead-letter
// settings. Records are forwarded in wire form, never decoded beyond their
// positions, so that the host costs as little as it can.
type Pipeline struct {
	Source      SourcePlugin
	Destination DestinationPlugin
	// Records stops the pipeline once this many records were acked end to
	// end; records the source sends while stopping are still delivered.
	// Zero runs until ctx is done.
	Records int64
	// PerMessage forwards each source record in a message of its own, as
	// Conduit's default engine does. Otherwise each source message travels
	// to the destination whole, as with --preview.pipeline-arch-v2.
	PerMessage bool
	// OnAck, if set, is called with the position of every acked record.
	OnAck func(opencdc.Position)
}

// Result is what a pipeline run did.
type Result struct {
	Read, Acked   int64
	SourceBatches int64         // messages the source sent
	AckBatches    int64         // messages of acks the destination sent
	LastPosition  []byte        // what the source's Stop returned
	Elapsed       time.Duration // from the first record read to the last ack
	// Latencies, sorted, from forwarding each record to the destination to
	// receiving its ack.
	Latencies []time.Duration
}

// Latency returns the q-quantile (0..1) of the ack latencies.
func (r Result) Latency(q float64) time.Duration { return quantile(r.Latencies, q) }

// NackError is a record the destination did not write.
type NackError struct {
	Position opencdc.Position
	Message  string
}

func (e *NackError) Error() string {
	return fmt.Sprintf("destination nacked position %q: %s", e.Position, e.Message)
}

// Run runs the pipeline: Run on both connectors, then Stop and Teardown in
// Conduit's order. It does not Configure or Open; the caller did.
func (p Pipeline) Run(ctx context.Context) (Result, error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	codec := grpc.ForceCodecV2(wire.NewCodec())
	src, err := p.Source.runProto(runCtx, codec)
	if err != nil {
		return Result{}, fmt.Errorf("source Run: %w", err)
	}
	dst, err := p.Destination.runProto(runCtx, codec)
	if err != nil {
		return Result{}, fmt.Errorf("destination Run: %w", err)
	}

	r := &run{Pipeline: p, enough: make(chan struct{}), lastSent: make(chan struct{}), lastAcked: make(chan struct{}), done: make(chan error, 2)}
	var loops sync.WaitGroup
	loops.Go(func() { r.forward(src, dst) })
	loops.Go(func() { r.ack(dst, src) })

	select {
	case <-r.enough:
	case err = <-r.done:
	case <-ctx.Done():
		err = fmt.Errorf("pipeline stopped after %d of %d records acked: %w", r.acked(), p.Records, ctx.Err())
	}
	if err == nil {
		err = r.stop(ctx)
	}
	cancel()
	// Cancelling the streams ends both loops. Wait for them: until they are
	// done, the ack loop may still call OnAck or count into the result, and
	// the caller owns both once Run returns.
	loops.Wait()
	// Teardown runs even when ctx is done, but a plugin that hangs in it
	// does not hang the caller.
	tdCtx, tdCancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout)
	defer tdCancel()
	_, srcErr := p.Source.Teardown(tdCtx, pconnector.SourceTeardownRequest{})
	_, dstErr := p.Destination.Teardown(tdCtx, pconnector.DestinationTeardownRequest{})
	res := r.res
	slices.Sort(res.Latencies)
	if !r.firstRead.IsZero() {
		res.Elapsed = r.lastAck.Sub(r.firstRead)
	}
	return res, errors.Join(err, wrap("source Teardown", srcErr), wrap("destination Teardown", dstErr))
}

// teardownTimeout bounds the Teardown calls at the end of a run.
const teardownTimeout = 30 * time.Second

type run struct {
	Pipeline
	enough    chan struct{} // closed when Records records are acked
	lastSent  chan struct{} // closed when the stop position is sent to the destination
	lastAcked chan struct{} // closed when the stop position is acked
	// done receives the error a loop ended with; each loop sends once at
	// most, and room for both means neither blocks once Run stops listening.
	done chan error

	mu            sync.Mutex
	res           Result
	inflight      [][]byte    // positions forwarded and not yet acked, oldest first
	forwardedAt   []time.Time // when each inflight record was forwarded
	stopAt        []byte
	stopped       bool
	lastForwarded []byte
	lastAckedPos  []byte
	firstRead     time.Time
	lastAck       time.Time
}

// stop does what Conduit does to stop a pipeline: stop the source, forward
// the records it still sends up to the position Stop returned, stop the
// destination at that position (without waiting for acks), and then wait
// until every record is acked.
func (r *run) stop(ctx context.Context) error {
	resp, err := r.Source.Stop(ctx, pconnector.SourceStopRequest{})
	if err != nil {
		return fmt.Errorf("source Stop: %w", err)
	}
	last := resp.LastPosition
	r.mu.Lock()
	r.res.LastPosition = last
	r.stopAt, r.stopped = last, true
	forwarded := len(last) == 0 || bytes.Equal(r.lastForwarded, last)
	acked := len(last) == 0 || bytes.Equal(r.lastAckedPos, last)
	r.mu.Unlock()
	if !forwarded {
		if err := r.wait(ctx, r.lastSent, "forward the source's last position %q", last); err != nil {
			return err
		}
	}
	if _, err := r.Destination.Stop(ctx, pconnector.DestinationStopRequest{LastPosition: last}); err != nil {
		return fmt.Errorf("destination Stop: %w", err)
	}
	if !acked {
		return r.wait(ctx, r.lastAcked, "the ack of the source's last position %q", last)
	}
	return nil
}

func (r *run) acked() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.res.Acked
}

func (r *run) wait(ctx context.Context, event chan struct{}, what string, pos opencdc.Position) error {
	select {
	case <-event:
		return nil
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("waiting for "+what+": %w", pos, ctx.Err())
	}
}

// forward sends what the source reads to the destination, in wire form.
func (r *run) forward(src connectorv2.SourcePlugin_RunClient, dst connectorv2.DestinationPlugin_RunClient) {
	for {
		msg := scannedRecords{keep: true}
		if err := src.RecvMsg(&msg); err != nil {
			r.done <- fmt.Errorf("receive from source: %w", err)
			return
		}
		records := msg.records
		if len(records) == 0 {
			continue
		}
		r.mu.Lock()
		if r.firstRead.IsZero() {
			r.firstRead = time.Now()
		}
		r.res.Read += int64(len(records))
		r.res.SourceBatches++
		now := time.Now()
		for _, pos := range msg.positions {
			r.inflight = append(r.inflight, pos)
			r.forwardedAt = append(r.forwardedAt, now)
		}
		r.mu.Unlock()
		if r.PerMessage {
			for _, rec := range records {
				if err := dst.SendMsg(wire.Encoded(rec)); err != nil {
					r.done <- fmt.Errorf("send to destination: %w", err)
					return
				}
			}
		} else if err := dst.SendMsg(wire.Encoded(slices.Concat(records...))); err != nil {
			r.done <- fmt.Errorf("send to destination: %w", err)
			return
		}
		r.mu.Lock()
		r.lastForwarded = msg.positions[len(msg.positions)-1]
		if r.stopped && bytes.Equal(r.lastForwarded, r.stopAt) {
			close(r.lastSent)
		}
		r.mu.Unlock()
	}
}

// ack checks the destination's acks and passes them to the source.
func (r *run) ack(dst connectorv2.DestinationPlugin_RunClient, src connectorv2.SourcePlugin_RunClient) {
	for {
		resp, err := dst.Recv()
		if err != nil {
			r.done <- fmt.Errorf("receive acks from destination: %w", err)
			return
		}
		positions := make([][]byte, 0, len(resp.GetAcks()))
		now := time.Now()
		r.mu.Lock()
		r.res.AckBatches++
		for _, a := range resp.GetAcks() {
			pos := a.GetPosition()
			if len(r.inflight) == 0 || !bytes.Equal(r.inflight[0], pos) {
				var want []byte
				if len(r.inflight) > 0 {
					want = r.inflight[0]
				}
				r.mu.Unlock()
				r.done <- fmt.Errorf("destination acked position %q out of order, expected %q", pos, want)
				return
			}
			if a.GetError() != "" {
				r.mu.Unlock()
				r.done <- &NackError{Position: pos, Message: a.GetError()}
				return
			}
			r.res.Latencies = append(r.res.Latencies, now.Sub(r.forwardedAt[0]))
			r.inflight, r.forwardedAt = r.inflight[1:], r.forwardedAt[1:]
			positions = append(positions, pos)
			r.lastAckedPos = pos
			r.res.Acked++
			if r.Records > 0 && r.res.Acked == r.Records {
				close(r.enough)
			}
			if r.stopped && bytes.Equal(pos, r.stopAt) {
				close(r.lastAcked)
			}
		}
		r.lastAck = time.Now()
		r.mu.Unlock()
		if r.OnAck != nil {
			for _, p := range positions {
				r.OnAck(p)
			}
		}
		if err := src.Send(&connectorv2.Source_Run_Request{AckPositions: positions}); err != nil {
			r.done <- fmt.Errorf("send acks to source: %w", err)
			return
		}
	}
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
