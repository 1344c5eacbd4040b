package plugin

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/metrics"
)

// sourceServer serves one source connector instance to Conduit.
//
// Its Run is an owner loop (see owner) with three goroutines: the reader
// calls Read or ReadBatch and puts what it read in the inbox; the sender,
// the loop's worker, sends one message at a time; the acker receives
// Conduit's acks, checks they come in the order records were sent, and
// passes them to the connector. Whenever the sender is free, the owner
// hands it everything read so far, up to the batching limits. The sender
// is free once Conduit's transport has taken its message: at once while
// Conduit keeps up, and only as Conduit reads on when it does not, so that
// a busy Conduit gets what was read meanwhile in one message; where a busy
// Conduit reads a message only once it has acked the last, the sender also
// waits for that ack (see readPace). Other acks pace nothing: Conduit may
// send them late (v0.19 sends them once it has stored the positions). Stop
// ends the reader and has the owner send what it
// holds; the acker goes on until Conduit closes the stream.
type sourceServer struct {
	instance[Source]

	readMu   sync.Mutex         // guards the fields below
	stopRead context.CancelFunc // ends the reader; nil until Run
	readDone chan struct{}      // closed when the reader has returned
	stopped  bool               // Stop came before Run: Run reads nothing
	lastRead opencdc.Position   // the last record read, sent or on its way
	inflight [][]byte           // positions read and not yet acked, oldest first
}

func newSourceServer(c Factory, log *slog.Logger) *sourceServer {
	return &sourceServer{instance: newInstance[Source]("source", c, log)}
}

func (s *sourceServer) Configure(_ context.Context, req pconnector.SourceConfigureRequest) (pconnector.SourceConfigureResponse, error) {
	return pconnector.SourceConfigureResponse{}, s.configure(req.Config)
}

func (s *sourceServer) Open(ctx context.Context, req pconnector.SourceOpenRequest) (pconnector.SourceOpenResponse, error) {
	return pconnector.SourceOpenResponse{}, s.open(ctx, req.Position)
}

func (s *sourceServer) Run(ctx context.Context, stream pconnector.SourceRunStream) error {
	return s.run(ctx, func(src *Source) (<-chan struct{}, error) { return s.serve(ctx, src, stream.Server()) })
}

// serve is Run's loop, with the reader and the acker. It returns when
// Conduit closes the stream or acks fail (with the error), when a send
// fails, or when reading failed and everything read before is sent. The
// acker outlives it until the stream ends: it returns the acker's end.
func (s *sourceServer) serve(ctx context.Context, src *Source, stream pconnector.SourceRunStreamServer) (<-chan struct{}, error) {
	// The acker's end ends the loop: Conduit closed the stream, or acked
	// out of order.
	loopCtx, endLoop := context.WithCancelCause(ctx)
	defer endLoop(nil)
	snd := newSender(stream)
	o, err := newOwner(loopCtx, src.Batch, src.Metrics.Set, snd, s.stops, false)
	if err != nil {
		snd.close()
		return nil, err
	}
	readCtx, stopRead := context.WithCancel(metrics.NewContext(loopCtx, src.Metrics.Set))
	defer stopRead()
	readDone := make(chan struct{})
	s.readMu.Lock()
	s.stopRead, s.readDone = stopRead, readDone
	if s.stopped {
		stopRead()
	}
	s.readMu.Unlock()

	quit := make(chan struct{})
	go func() {
		defer close(readDone)
		o.inbox.end(s.read(readCtx, src, func(recs []opencdc.Record) bool {
			first := !o.inbox.waiting()
			if !o.inbox.put(recs, quit) {
				return false
			}
			if first {
				// The owner likely waits for these: let it have this
				// processor now, not once the reader next blocks, which
				// on a busy machine is tens of µs on every record's path.
				runtime.Gosched()
			}
			return true
		}))
	}()
	ackDone := make(chan struct{})
	go func() {
		defer close(ackDone)
		endLoop(s.ack(metrics.NewContext(ctx, src.Metrics.Set), src, stream, snd.acked))
	}()

	err = o.run()
	close(quit)
	stopRead()
	<-readDone
	return ackDone, err
}

// read hands every record the source reads to deliver, as each Read or
// ReadBatch returned them, until ctx ends, reading fails or deliver returns
// false. Records returned together with a cancellation are still handed
// on: they have been read, and the source may not produce them again.
func (s *sourceServer) read(ctx context.Context, src *Source, deliver func([]opencdc.Record) bool) error {
	next := readerFor(src)
	for {
		records, err := next(ctx)
		for _, rec := range records {
			if err := s.track(rec); err != nil {
				return err
			}
		}
		if len(records) > 0 && !deliver(records) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("read: %w", err)
		}
	}
}

// readerFor returns how to read from src: a batched source is asked for
// up to the policy's count, and no more records than the byte limit holds
// at the size of the records read so far (so that a source of large
// records does not read a thousand of them at once).
func readerFor(src *Source) func(context.Context) ([]opencdc.Record, error) {
	limit, budget := 1, 0
	if src.Batched {
		limit = defaultReadBatch
		if src.Batch.Count > 0 {
			limit = src.Batch.Count
		}
		budget = holdFor(src.Batch, 1).Bytes / 2
	}
	avg := 0 // bytes per record, estimated from the first record of each batch
	return func(ctx context.Context) (recs []opencdc.Record, err error) {
		n := limit
		if avg > 0 {
			n = min(limit, max(1, budget/avg))
		}
		var began time.Time
		if src.Metrics.Set != nil {
			began = time.Now()
		}
		err = guard("Read", func() error { recs, err = src.Read(ctx, n); return err })
		if src.Metrics.Set != nil {
			src.Metrics.Set.Called(time.Since(began))
		}
		if len(recs) > n {
			return nil, fmt.Errorf("read: got %d records, more than the %d asked for", len(recs), n)
		}
		if src.Batched && len(recs) > 0 {
			sz := recordSize(recs[0]) + 1
			if avg == 0 {
				avg = sz
			} else {
				avg = (3*avg + sz) / 4
			}
		}
		return recs, err
	}
}

// defaultReadBatch is how many records ReadBatch may return at once when no
// batch size is configured.
const defaultReadBatch = 1000

// track checks rec's position and remembers it, in order, for the acks.
func (s *sourceServer) track(rec opencdc.Record) error {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	if len(rec.Position) == 0 {
		return fmt.Errorf("read: the source returned a record without a position (the record after position %q); every record needs a unique position", s.lastRead)
	}
	if bytes.Equal(rec.Position, s.lastRead) {
		return fmt.Errorf("read: the source returned position %q twice in a row; positions must be unique", rec.Position)
	}
	s.inflight = append(s.inflight, rec.Position)
	s.lastRead = rec.Position
	return nil
}

// ack passes Conduit's acks to the source, checking they arrive in the order
// the records were sent, and tells requested how many positions each
// request of Conduit's brings, as it comes. It returns when the stream
// ends.
func (s *sourceServer) ack(ctx context.Context, src *Source, stream pconnector.SourceRunStreamServer, requested func(n int)) error {
	ack := src.Ack
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		requested(len(req.AckPositions))
		for _, pos := range req.AckPositions {
			s.readMu.Lock()
			var want []byte
			if len(s.inflight) > 0 {
				want = s.inflight[0]
				s.inflight = s.inflight[1:]
			}
			s.readMu.Unlock()
			if want == nil || !bytes.Equal(want, pos) {
				return fmt.Errorf("ack for position %q, expected %q: acks must come in the order records were sent", pos, want)
			}
			if ack == nil {
				continue
			}
			if err := guard("Ack", func() error { return ack(ctx, pos) }); err != nil {
				return fmt.Errorf("ack position %q: %w", pos, err)
			}
		}
		src.Metrics.Set.Acked(len(req.AckPositions))
	}
}

// Stop ends reading, sends what was read without waiting for a batch to
// fill, and returns the position of the last record. The Run stream stays
// open so Conduit can deliver the remaining acks.
func (s *sourceServer) Stop(ctx context.Context, _ pconnector.SourceStopRequest) (pconnector.SourceStopResponse, error) {
	s.readMu.Lock()
	stopRead, readDone := s.stopRead, s.readDone
	if stopRead == nil {
		s.stopped = true // Run, if it comes, reads nothing
	}
	s.readMu.Unlock()
	if stopRead == nil {
		return pconnector.SourceStopResponse{}, nil
	}
	stopRead()
	select {
	case <-readDone:
	case <-ctx.Done():
		return pconnector.SourceStopResponse{}, fmt.Errorf("stop source: the connector's Read did not return: %w", ctx.Err())
	}
	s.readMu.Lock()
	last := s.lastRead
	s.readMu.Unlock()
	if err := s.stop(ctx, last); err != nil {
		return pconnector.SourceStopResponse{}, fmt.Errorf("stop source: send the last records: %w", err)
	}
	return pconnector.SourceStopResponse{LastPosition: last}, nil
}

// Teardown ends reading, waits for Run to end, and tears the connector
// down (see instance.teardown).
func (s *sourceServer) Teardown(ctx context.Context, _ pconnector.SourceTeardownRequest) (pconnector.SourceTeardownResponse, error) {
	return pconnector.SourceTeardownResponse{}, s.teardown(ctx, s.stopReading)
}

func (s *sourceServer) stopReading() {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	if s.stopRead != nil {
		s.stopRead()
	}
}

// The lifecycle calls, made as for either role (see instance.lifecycle).
func (s *sourceServer) LifecycleOnCreated(ctx context.Context, req pconnector.SourceLifecycleOnCreatedRequest) (pconnector.SourceLifecycleOnCreatedResponse, error) {
	return pconnector.SourceLifecycleOnCreatedResponse{}, s.lifecycle(ctx, req.Config, "OnCreated", func(c Calls) error { return c.created(ctx) })
}
func (s *sourceServer) LifecycleOnUpdated(ctx context.Context, req pconnector.SourceLifecycleOnUpdatedRequest) (pconnector.SourceLifecycleOnUpdatedResponse, error) {
	return pconnector.SourceLifecycleOnUpdatedResponse{}, s.lifecycle(ctx, req.ConfigAfter, "OnUpdated", func(c Calls) error { return c.updated(ctx, req.ConfigBefore) })
}
func (s *sourceServer) LifecycleOnDeleted(ctx context.Context, req pconnector.SourceLifecycleOnDeletedRequest) (pconnector.SourceLifecycleOnDeletedResponse, error) {
	return pconnector.SourceLifecycleOnDeletedResponse{}, s.lifecycle(ctx, req.Config, "OnDeleted", func(c Calls) error { return c.deleted(ctx) })
}
