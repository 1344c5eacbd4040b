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

// sourceServer serves one source connector instance to Conduit.
//
// Run starts two loops: the reader sends what the connector reads (as each
// Read or ReadBatch returned it, or in batches under the source's batching
// policy), the acker
// receives Conduit's acks, checks they come in the order records were sent,
// and passes them to the connector. Stop ends the reader only; the acker
// keeps running until Conduit closes the stream.
type sourceServer struct {
	newSource func(map[string]string) (Source, batcher.Policy, error)
	log       *slog.Logger

	mu       sync.Mutex
	src      *source
	stopRead context.CancelFunc               // ends the reader; nil until Run
	readDone chan struct{}                    // closed when the reader has returned
	runDone  chan struct{}                    // closed when Run and both its loops have returned
	out      *batcher.Batcher[opencdc.Record] // collects records into messages; nil without batching
	lastRead opencdc.Position                 // the last record read, sent or on its way
	inflight [][]byte                         // positions read and not yet acked, oldest first
}

func newSourceServer(newSource func(map[string]string) (Source, batcher.Policy, error), log *slog.Logger) *sourceServer {
	return &sourceServer{newSource: newSource, log: log}
}

func (s *sourceServer) Configure(_ context.Context, req pconnector.SourceConfigureRequest) (pconnector.SourceConfigureResponse, error) {
	var src Source
	var batch batcher.Policy
	err := guard("Configure", func() (err error) {
		src, batch, err = s.newSource(req.Config)
		return err
	})
	if err != nil {
		return pconnector.SourceConfigureResponse{}, status.Error(codes.InvalidArgument, err.Error())
	}
	s.mu.Lock()
	s.src = newSource(src, batch)
	s.mu.Unlock()
	return pconnector.SourceConfigureResponse{}, nil
}

func (s *sourceServer) source() (*source, error) {
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
	send := func(records []opencdc.Record) error {
		if err := stream.Server().Send(pconnector.SourceRunResponse{Records: records}); err != nil {
			return fmt.Errorf("send records to Conduit: %w", err)
		}
		return nil
	}
	// The batcher exists before Stop can see that Run started, so that Stop
	// always flushes what the reader collected.
	var out *batcher.Batcher[opencdc.Record]
	if src.batch != (batcher.Policy{}) {
		out, err = batcher.New(src.batch, recordSize, func(_ context.Context, batch []opencdc.Record, _ batcher.Reason) error {
			return send(batch)
		})
		if err != nil {
			return err
		}
	}
	readCtx, stopRead := context.WithCancel(ctx)
	defer stopRead()
	s.mu.Lock()
	if s.stopRead != nil {
		s.mu.Unlock()
		if out != nil {
			_ = out.Close(ctx)
		}
		return status.Error(codes.FailedPrecondition, "source is already running")
	}
	s.stopRead, s.out = stopRead, out
	s.readDone = make(chan struct{})
	s.runDone = make(chan struct{})
	runDone := s.runDone
	s.mu.Unlock()

	failed := make(chan error, 2)
	go func() {
		defer close(s.readDone)
		if err := s.read(readCtx, src, send, out); err != nil {
			failed <- err
		}
	}()
	ackDone := make(chan struct{})
	go func() {
		defer close(ackDone)
		failed <- s.ack(ctx, src, stream.Server())
	}()

	select {
	case err = <-failed:
	case <-ctx.Done():
	}
	stopRead()
	<-s.readDone
	if out != nil {
		// Records still collected cannot reach Conduit once the stream is
		// gone; they were never acked, so the source reads them again after
		// a restart.
		if cerr := out.Close(context.WithoutCancel(ctx)); cerr != nil && ctx.Err() == nil && err == nil {
			err = cerr
		}
	}
	// Teardown waits for both loops; the acker's Recv returns once Run has.
	go func() { <-ackDone; close(runDone) }()
	// A stream closed by Conduit is the normal end, not an error.
	if err == nil || errors.Is(err, io.EOF) || status.Code(err) == codes.Canceled || errors.Is(err, context.Canceled) {
		return nil
	}
	s.log.Error("source stopped with an error", "error", err)
	return err
}

// read passes every record the source reads to send, or to out when the
// source batches, until ctx ends or reading fails. Records returned together
// with a cancellation are still passed on: they have been read, and the
// source may not produce them again.
func (s *sourceServer) read(ctx context.Context, src *source, send func([]opencdc.Record) error, out *batcher.Batcher[opencdc.Record]) error {
	next := readerFor(src)
	// Adding to the batcher outlives ctx: a record read is never dropped.
	addCtx := context.WithoutCancel(ctx)
	for {
		records, err := next(ctx)
		for _, rec := range records {
			if err := s.track(rec); err != nil {
				return err
			}
			if out != nil {
				if err := out.Add(addCtx, rec); err != nil {
					return err
				}
			}
		}
		// Without batching, records go out as the source returned them: a
		// Read's record alone, a ReadBatch's records in one message.
		if out == nil && len(records) > 0 {
			if err := send(records); err != nil {
				return err
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("read: %w", err)
		}
	}
}

// readerFor returns how to read from src: with ReadBatch when the source has
// it, in batches of up to the policy's count.
func readerFor(src *source) func(context.Context) ([]opencdc.Record, error) {
	if br := src.reader; br != nil {
		max := defaultReadBatch
		if src.batch.Count > 0 {
			max = src.batch.Count
		}
		return func(ctx context.Context) (recs []opencdc.Record, err error) {
			err = guard("ReadBatch", func() error { recs, err = br.ReadBatch(ctx, max); return err })
			if len(recs) > max {
				return nil, fmt.Errorf("ReadBatch returned %d records, more than the %d asked for", len(recs), max)
			}
			return recs, err
		}
	}
	one := make([]opencdc.Record, 1)
	return func(ctx context.Context) ([]opencdc.Record, error) {
		err := guard("Read", func() (err error) { one[0], err = src.Read(ctx); return err })
		if err != nil {
			return nil, err
		}
		return one, nil
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
// the records were sent. It returns when the stream ends.
func (s *sourceServer) ack(ctx context.Context, src *source, stream pconnector.SourceRunStreamServer) error {
	a, hasAck := src.acker, src.acker != nil
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
			if !hasAck {
				continue
			}
			if err := guard("Ack", func() error { return a.Ack(ctx, pos) }); err != nil {
				return fmt.Errorf("ack position %q: %w", pos, err)
			}
		}
	}
}

// Stop ends reading, sends what was read, and returns the position of the
// last record. The Run stream stays open so Conduit can deliver the
// remaining acks.
func (s *sourceServer) Stop(ctx context.Context, _ pconnector.SourceStopRequest) (pconnector.SourceStopResponse, error) {
	s.mu.Lock()
	stopRead, readDone, out := s.stopRead, s.readDone, s.out
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
	if out != nil {
		if err := out.Flush(ctx); err != nil {
			return pconnector.SourceStopResponse{}, fmt.Errorf("stop source: send the last records: %w", err)
		}
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
	return pconnector.SourceLifecycleOnCreatedResponse{}, s.lifecycle(ctx, req.Config, "OnCreated", func(c any) error {
		if h, ok := middleware.Find[middleware.CreatedHook](c); ok {
			return h.OnCreated(ctx)
		}
		return nil
	})
}

func (s *sourceServer) LifecycleOnUpdated(ctx context.Context, req pconnector.SourceLifecycleOnUpdatedRequest) (pconnector.SourceLifecycleOnUpdatedResponse, error) {
	return pconnector.SourceLifecycleOnUpdatedResponse{}, s.lifecycle(ctx, req.ConfigAfter, "OnUpdated", func(c any) error {
		if h, ok := middleware.Find[middleware.UpdatedHook](c); ok {
			return h.OnUpdated(ctx, req.ConfigBefore)
		}
		return nil
	})
}

func (s *sourceServer) LifecycleOnDeleted(ctx context.Context, req pconnector.SourceLifecycleOnDeletedRequest) (pconnector.SourceLifecycleOnDeletedResponse, error) {
	return pconnector.SourceLifecycleOnDeletedResponse{}, s.lifecycle(ctx, req.Config, "OnDeleted", func(c any) error {
		if h, ok := middleware.Find[middleware.DeletedHook](c); ok {
			return h.OnDeleted(ctx)
		}
		return nil
	})
}

// lifecycle runs a hook on the configured source, or on one built from
// config when Conduit calls the hook without Configure (as it does on
// deletion).
func (s *sourceServer) lifecycle(ctx context.Context, config map[string]string, call string, hook func(any) error) error {
	s.mu.Lock()
	var configured any
	if s.src != nil {
		configured = s.src.Source
	}
	s.mu.Unlock()
	return runHook(ctx, s.log, call, configured, func() (any, error) {
		src, _, err := s.newSource(config)
		return src, err
	}, hook)
}
