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
	// Exact makes Records a bound on what is forwarded too: the records
	// the source sends after the first Records (it reads ahead) are
	// received and dropped, never acked, as a pipeline stopped at the
	// last record forwarded leaves them to be read again.
	Exact bool
	// PerMessage forwards each source record in a message of its own, as
	// Conduit's default engine does. Otherwise each source message travels
	// to the destination whole, as with --preview.pipeline-arch-v2.
	PerMessage bool
	// OnAck, if set, is called with the position of every acked record.
	OnAck func(opencdc.Position)
	// StoreEvery, if set, acks the source as Conduit v0.19 does: each of
	// its Ack calls (one a source message, the v2 engine's; one a record
	// with PerMessage, the default engine's) waits until Conduit has
	// stored the position, StoreEvery after the first call since the last
	// store, or at once at the storeAcks-th call; then each call goes in a
	// request of its own, back to back. Otherwise each of the
	// destination's ack messages goes to the source at once, as Conduit
	// v0.14 does.
	StoreEvery time.Duration
}

// storeAcks is how many Ack calls Conduit v0.19 lets wait before it stores
// their position, however soon.
const storeAcks = 10000

// Result is what a pipeline run did.
type Result struct {
	Read, Acked   int64         // records forwarded to the destination; acked
	Dropped       int64         // records received beyond Records, with Exact
	SourceBatches int64         // messages the source sent
	AckBatches    int64         // messages of acks the destination sent
	LastPosition  []byte        // what the source's Stop returned
	Elapsed       time.Duration // from the first record read to the last ack
	// Latencies, sorted, from forwarding each record to the destination to
	// receiving its ack.
	Latencies []time.Duration
	// ReadLatencies, sorted, from each record's opencdc.readAt (the
	// source's read) to its destination ack, as Conduit's
	// conduit_pipeline_execution_duration_seconds measures; records
	// without a readAt are left out.
	ReadLatencies []time.Duration
}

// Latency returns the q-quantile (0..1) of the ack latencies.
func (r Result) Latency(q float64) time.Duration { return quantile(r.Latencies, q) }

// ReadLatency returns the q-quantile (0..1) of the latencies from the
// sources' reads.
func (r Result) ReadLatency(q float64) time.Duration { return quantile(r.ReadLatencies, q) }

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

	r := &run{Pipeline: p, enough: make(chan struct{}), lastSent: make(chan struct{}), lastAcked: make(chan struct{}), done: make(chan error, 3), heldMore: make(chan struct{}, 1), storeEnd: make(chan error, 1)}
	var loops sync.WaitGroup
	loops.Go(func() { r.forward(src, dst) })
	loops.Go(func() { r.ack(dst, src) })
	if p.StoreEvery > 0 {
		loops.Go(func() { r.store(runCtx, src) })
	}

	select {
	case <-r.enough:
	case err = <-r.done:
	case <-ctx.Done():
		err = fmt.Errorf("pipeline stopped after %d of %d records acked: %w", r.acked(), p.Records, ctx.Err())
	}
	if err == nil {
		err = r.stop(ctx)
	}
	if err == nil && p.StoreEvery > 0 { // Conduit stores what is acked when it stops
		err = r.storeAll(ctx)
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
	slices.Sort(res.ReadLatencies)
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
	lastSent  chan struct{} // closed when the stop position came from the source: forwarded, or dropped (Exact)
	lastAcked chan struct{} // closed when the stop position is acked
	// done receives the error a loop ended with; each loop sends once at
	// most, and room for all means none blocks once Run stops listening.
	done     chan error
	heldMore chan struct{} // holds a signal once more Ack calls wait for a store, or the last store is asked for
	storeEnd chan error    // store's reply once the last store is asked for: the last acks are sent

	mu            sync.Mutex
	res           Result
	inflight      [][]byte    // positions forwarded and not yet acked, oldest first
	forwardedAt   []time.Time // when each inflight record was forwarded
	readAt        []int64     // each inflight record's opencdc.readAt, 0 if none
	messages      []int       // records of each source message forwarded and not wholly acked (StoreEvery)
	call          [][]byte    // the positions acked of the oldest of them
	held          [][][]byte  // Ack calls waiting for a store, each its positions (StoreEvery)
	storeFinal    bool        // the next store is the last: every record is acked
	stopAt        []byte
	stopped       bool
	lastForwarded []byte
	lastReceived  []byte // from the source, forwarded or dropped
	lastAckedPos  []byte
	firstRead     time.Time
	lastAck       time.Time
}

// stop does what Conduit does to stop a pipeline: stop the source, forward
// the records it still sends up to the position Stop returned, stop the
// destination at that position (without waiting for acks), and then wait
// until every record is acked. With Exact, the records forwarded are all
// acked already, and the destination stops at the last of them.
func (r *run) stop(ctx context.Context) error {
	resp, err := r.Source.Stop(ctx, pconnector.SourceStopRequest{})
	if err != nil {
		return fmt.Errorf("source Stop: %w", err)
	}
	last := resp.LastPosition
	r.mu.Lock()
	r.res.LastPosition = last
	r.stopAt, r.stopped = last, true
	received := len(last) == 0 || bytes.Equal(r.lastReceived, last)
	acked := len(last) == 0 || bytes.Equal(r.lastAckedPos, last) || r.Exact
	r.mu.Unlock()
	if !received {
		if err := r.wait(ctx, r.lastSent, "forward the source's last position %q", last); err != nil {
			return err
		}
	}
	if r.Exact {
		r.mu.Lock()
		last = r.lastForwarded
		r.mu.Unlock()
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
		records, positions := msg.records, msg.positions
		if len(records) == 0 {
			continue
		}
		r.mu.Lock()
		if r.firstRead.IsZero() {
			r.firstRead = time.Now()
		}
		r.res.SourceBatches++
		received := positions[len(positions)-1]
		if r.Exact && r.Records > 0 {
			keep := min(int64(len(records)), max(r.Records-r.res.Read, 0))
			r.res.Dropped += int64(len(records)) - keep
			records, positions = records[:keep], positions[:keep]
		}
		r.res.Read += int64(len(records))
		now := time.Now()
		for _, pos := range positions {
			r.inflight = append(r.inflight, pos)
			r.forwardedAt = append(r.forwardedAt, now)
		}
		r.readAt = append(r.readAt, msg.readAt[:len(records)]...)
		if r.StoreEvery > 0 && len(records) > 0 {
			r.messages = append(r.messages, len(records))
		}
		r.mu.Unlock()
		if err := r.send(dst, records); err != nil {
			r.done <- fmt.Errorf("send to destination: %w", err)
			return
		}
		r.mu.Lock()
		if len(positions) > 0 {
			r.lastForwarded = positions[len(positions)-1]
		}
		r.lastReceived = received
		if r.stopped && bytes.Equal(r.lastReceived, r.stopAt) {
			close(r.lastSent)
		}
		r.mu.Unlock()
	}
}

// send sends records to the destination: each in a message of its own
// with PerMessage, else all in one; nothing if there are none.
func (r *run) send(dst connectorv2.DestinationPlugin_RunClient, records [][]byte) error {
	if !r.PerMessage && len(records) > 0 {
		return dst.SendMsg(wire.Encoded(slices.Concat(records...)))
	}
	for _, rec := range records {
		if err := dst.SendMsg(wire.Encoded(rec)); err != nil {
			return err
		}
	}
	return nil
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
			if r.readAt[0] > 0 {
				r.res.ReadLatencies = append(r.res.ReadLatencies, now.Sub(time.Unix(0, r.readAt[0])))
			}
			r.inflight, r.forwardedAt, r.readAt = r.inflight[1:], r.forwardedAt[1:], r.readAt[1:]
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
		if r.StoreEvery > 0 {
			r.holdCalls(positions)
		}
		r.mu.Unlock()
		if r.OnAck != nil {
			for _, p := range positions {
				r.OnAck(p)
			}
		}
		if r.StoreEvery > 0 {
			notify(r.heldMore)
			continue
		}
		if err := src.Send(&connectorv2.Source_Run_Request{AckPositions: positions}); err != nil {
			r.done <- fmt.Errorf("send acks to source: %w", err)
			return
		}
	}
}

// holdCalls turns acked positions into the Ack calls Conduit makes, one
// for each source message wholly acked (one for each record with
// PerMessage), and holds them for a store. r.mu is held.
func (r *run) holdCalls(positions [][]byte) {
	for _, pos := range positions {
		r.call = append(r.call, pos)
		if !r.PerMessage && len(r.call) < r.messages[0] {
			continue
		}
		r.held = append(r.held, r.call)
		r.call = nil
		if !r.PerMessage {
			r.messages = r.messages[1:]
		}
	}
}

// store acks the source as Conduit v0.19 does (see StoreEvery), until ctx
// is done, or until the store after storeAll asked for the last, whose
// outcome it sends on storeEnd.
func (r *run) store(ctx context.Context, src connectorv2.SourcePlugin_RunClient) {
	timer := time.NewTimer(r.StoreEvery)
	timer.Stop()
	defer timer.Stop()
	timing := false // the timer runs for the calls held
	for {
		due := false
		select {
		case <-timer.C:
			due = true
		case <-r.heldMore:
		case <-ctx.Done():
			return
		}
		r.mu.Lock()
		calls, final := r.held, r.storeFinal
		due = due || final || len(calls) >= storeAcks
		if due {
			r.held = nil
		}
		r.mu.Unlock()
		if !due {
			if !timing && len(calls) > 0 {
				timer.Reset(r.StoreEvery)
				timing = true
			}
			continue
		}
		timer.Stop()
		timing = false
		var err error
		for _, positions := range calls {
			if err = src.Send(&connectorv2.Source_Run_Request{AckPositions: positions}); err != nil {
				err = fmt.Errorf("send acks to source: %w", err)
				break
			}
		}
		if final {
			r.storeEnd <- err
			return
		}
		if err != nil {
			r.done <- err
			return
		}
	}
}

// storeAll has store send the acks still held, once every record is acked.
func (r *run) storeAll(ctx context.Context) error {
	r.mu.Lock()
	r.storeFinal = true
	r.mu.Unlock()
	notify(r.heldMore) // or a signal waits, which store will take as the last
	select {
	case err := <-r.storeEnd:
		return err
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("store the last acks: %w", ctx.Err())
	}
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// notify leaves a signal in c, a channel with a buffer of one, unless one
// is already waiting there.
func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
