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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// sourceServer serves one source connector instance to Conduit.
//
// Run is one owner loop (see flow_source.go) with three goroutines: the
// reader calls Read or ReadBatch and puts what it read in its inbox, which
// the owner empties only while what is read and not yet sent is within
// bounds (the reader waits while the inbox is full); the sender
// sends one message at a time; the acker receives Conduit's acks, checks
// they come in the order records were sent, and passes them to the
// connector. Whenever the sender is free and Conduit ready (see
// sourceFlow), the owner hands it everything read so far, up to the
// batching limits. Stop ends the reader and has the owner send what it
// holds; the acker keeps running until Conduit closes the stream.
type sourceServer struct {
	newSource func(map[string]string) (Source, error)
	log       *slog.Logger

	mu       sync.Mutex
	src      *Source            // nil until Configure
	stopRead context.CancelFunc // ends the reader; nil until Run
	readDone chan struct{}      // closed when the reader has returned
	runDone  chan struct{}      // closed when Run and both its loops have returned
	flushes  chan chan struct{} // Stop's requests to send everything read
	stopped  bool               // Stop came before Run: Run reads nothing
	lastRead opencdc.Position   // the last record read, sent or on its way
	inflight [][]byte           // positions read and not yet acked, oldest first
}

func newSourceServer(newSource func(map[string]string) (Source, error), log *slog.Logger) *sourceServer {
	return &sourceServer{newSource: newSource, log: log}
}

func (s *sourceServer) Configure(_ context.Context, req pconnector.SourceConfigureRequest) (pconnector.SourceConfigureResponse, error) {
	var src Source
	err := guard("Configure", func() (err error) {
		src, err = s.newSource(req.Config)
		return err
	})
	if err != nil {
		return pconnector.SourceConfigureResponse{}, status.Error(codes.InvalidArgument, err.Error())
	}
	s.mu.Lock()
	s.src = &src
	s.mu.Unlock()
	return pconnector.SourceConfigureResponse{}, nil
}

func (s *sourceServer) source() (*Source, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.src == nil {
		return nil, status.Error(codes.FailedPrecondition, "source is not configured: Configure must succeed first")
	}
	return s.src, nil
}

func (s *sourceServer) Open(ctx context.Context, req pconnector.SourceOpenRequest) (pconnector.SourceOpenResponse, error) {
	src, err := s.source()
	if err != nil {
		return pconnector.SourceOpenResponse{}, err
	}
	if err := guard("Open", func() error { return src.Open(ctx, req.Position) }); err != nil {
		return pconnector.SourceOpenResponse{}, fmt.Errorf("open source: %w", err)
	}
	return pconnector.SourceOpenResponse{}, nil
}

func (s *sourceServer) Run(ctx context.Context, stream pconnector.SourceRunStream) error {
	src, err := s.source()
	if err != nil {
		return err
	}
	out, err := batcher.New(src.Batch, holdFor(src.Batch), recordSize)
	if err != nil {
		return err
	}
	readCtx, stopRead := context.WithCancel(ctx)
	defer stopRead()
	flushes := make(chan chan struct{})
	s.mu.Lock()
	if s.stopRead != nil {
		s.mu.Unlock()
		return status.Error(codes.FailedPrecondition, "source is already running")
	}
	s.stopRead, s.flushes = stopRead, flushes
	if s.stopped {
		stopRead()
	}
	s.readDone = make(chan struct{})
	s.runDone = make(chan struct{})
	readDone, runDone := s.readDone, s.runDone
	s.mu.Unlock()

	quit := make(chan struct{})
	inbox := newInbox()
	go func() {
		defer close(readDone)
		inbox.end(s.read(readCtx, src, func(recs []opencdc.Record) bool {
			return inbox.put(recs, quit)
		}))
	}()
	ackFailed := make(chan error, 1)
	ackDone := make(chan struct{})
	acks := newConduitAcks()
	go func() {
		defer close(ackDone)
		ackFailed <- s.ack(ctx, src, stream.Server(), acks)
	}()

	f := &sourceFlow{stream: stream.Server(), out: out, ctx: ctx, inbox: inbox, ackFailed: ackFailed, acks: acks, flushes: flushes}
	err = f.run()
	close(quit)
	stopRead()
	<-readDone
	// Teardown waits for both loops; the acker's Recv returns once Run has.
	go func() { <-ackDone; close(runDone) }()
	// A stream closed by Conduit is the normal end, not an error.
	if err == nil || errors.Is(err, io.EOF) || status.Code(err) == codes.Canceled || errors.Is(err, context.Canceled) {
		return nil
	}
	s.log.Error("source stopped with an error", "error", err)
	return err
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
		budget = holdFor(src.Batch).Bytes / 2
	}
	avg := 0 // bytes per record, estimated from the first record of each batch
	return func(ctx context.Context) (recs []opencdc.Record, err error) {
		n := limit
		if avg > 0 {
			n = min(limit, max(1, budget/avg))
		}
		err = guard("Read", func() error { recs, err = src.Read(ctx, n); return err })
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
	s.mu.Lock()
	defer s.mu.Unlock()
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
// the records were sent, and notes each request in acks. It returns when
// the stream ends.
func (s *sourceServer) ack(ctx context.Context, src *Source, stream pconnector.SourceRunStreamServer, acks *conduitAcks) error {
	ack := src.Ack
	for {
		req, err := stream.Recv()
		if err != nil {
			return err
		}
		for _, pos := range req.AckPositions {
			s.mu.Lock()
			var want []byte
			if len(s.inflight) > 0 {
				want = s.inflight[0]
				s.inflight = s.inflight[1:]
			}
			s.mu.Unlock()
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
		acks.acked(len(req.AckPositions))
	}
}

// Stop ends reading, sends what was read without waiting for a batch to
// fill, and returns the position of the last record. The Run stream stays
// open so Conduit can deliver the remaining acks.
func (s *sourceServer) Stop(ctx context.Context, _ pconnector.SourceStopRequest) (pconnector.SourceStopResponse, error) {
	s.mu.Lock()
	stopRead, readDone, runDone, flushes := s.stopRead, s.readDone, s.runDone, s.flushes
	if stopRead == nil {
		s.stopped = true // Run, if it comes, reads nothing
	}
	s.mu.Unlock()
	if stopRead == nil {
		return pconnector.SourceStopResponse{}, nil
	}
	stopRead()
	select {
	case <-readDone:
	case <-ctx.Done():
		return pconnector.SourceStopResponse{}, fmt.Errorf("stop source: the connector's Read did not return: %w", ctx.Err())
	}
	sent := make(chan struct{})
	select {
	case flushes <- sent:
		select {
		case <-sent:
		case <-runDone:
		case <-ctx.Done():
			return pconnector.SourceStopResponse{}, fmt.Errorf("stop source: send the last records: %w", ctx.Err())
		}
	case <-runDone:
	case <-ctx.Done():
		return pconnector.SourceStopResponse{}, fmt.Errorf("stop source: send the last records: %w", ctx.Err())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return pconnector.SourceStopResponse{LastPosition: s.lastRead}, nil
}

// Teardown ends reading, waits for Run to return, and tears the connector
// down. It works whether or not Configure, Open or Run ever happened.
func (s *sourceServer) Teardown(ctx context.Context, _ pconnector.SourceTeardownRequest) (pconnector.SourceTeardownResponse, error) {
	s.mu.Lock()
	src, stopRead, runDone := s.src, s.stopRead, s.runDone
	s.mu.Unlock()
	if stopRead != nil {
		stopRead()
		select {
		case <-runDone:
		case <-ctx.Done():
			return pconnector.SourceTeardownResponse{}, fmt.Errorf("teardown source: Run did not end: %w", ctx.Err())
		}
	}
	if src == nil {
		return pconnector.SourceTeardownResponse{}, nil
	}
	if err := guard("Teardown", func() error { return src.Teardown(ctx) }); err != nil {
		return pconnector.SourceTeardownResponse{}, fmt.Errorf("teardown source: %w", err)
	}
	return pconnector.SourceTeardownResponse{}, nil
}

func (s *sourceServer) LifecycleOnCreated(ctx context.Context, req pconnector.SourceLifecycleOnCreatedRequest) (pconnector.SourceLifecycleOnCreatedResponse, error) {
	return pconnector.SourceLifecycleOnCreatedResponse{}, s.lifecycle(ctx, req.Config, "OnCreated", func(h Hooks) error { return h.created(ctx) })
}

func (s *sourceServer) LifecycleOnUpdated(ctx context.Context, req pconnector.SourceLifecycleOnUpdatedRequest) (pconnector.SourceLifecycleOnUpdatedResponse, error) {
	return pconnector.SourceLifecycleOnUpdatedResponse{}, s.lifecycle(ctx, req.ConfigAfter, "OnUpdated", func(h Hooks) error { return h.updated(ctx, req.ConfigBefore) })
}

func (s *sourceServer) LifecycleOnDeleted(ctx context.Context, req pconnector.SourceLifecycleOnDeletedRequest) (pconnector.SourceLifecycleOnDeletedResponse, error) {
	return pconnector.SourceLifecycleOnDeletedResponse{}, s.lifecycle(ctx, req.Config, "OnDeleted", func(h Hooks) error { return h.deleted(ctx) })
}

// lifecycle runs a hook of the configured source, or of one built from
// config (see [runHook]).
func (s *sourceServer) lifecycle(ctx context.Context, config map[string]string, name string, hook func(Hooks) error) error {
	s.mu.Lock()
	var configured *Hooks
	if s.src != nil {
		configured = &s.src.Hooks
	}
	s.mu.Unlock()
	return runHook(ctx, s.log, name, configured, func() (Hooks, func(context.Context) error, error) {
		src, err := s.newSource(config)
		return src.Hooks, src.Teardown, err
	}, hook)
}
