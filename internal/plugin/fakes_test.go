package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
)

var discard = slog.New(slog.DiscardHandler)

// stream is an in-memory Run stream: the server sends on out and receives
// from in. Closing in is Conduit closing its side.
type stream[In, Out any] struct {
	ctx context.Context
	in  chan In
	out chan Out
}

func newStream[In, Out any](ctx context.Context) *stream[In, Out] {
	return &stream[In, Out]{ctx: ctx, in: make(chan In), out: make(chan Out, 1000)}
}

func (s *stream[In, Out]) Send(v Out) error {
	if err := s.ctx.Err(); err != nil {
		return err // a closed stream sends nothing, even with room in out
	}
	select {
	case s.out <- v:
		return nil
	case <-s.ctx.Done():
		return s.ctx.Err()
	}
}

func (s *stream[In, Out]) Recv() (In, error) {
	var zero In
	select {
	case v, ok := <-s.in:
		if !ok {
			return zero, io.EOF
		}
		return v, nil
	case <-s.ctx.Done():
		return zero, s.ctx.Err()
	}
}

type sourceStream struct {
	*stream[pconnector.SourceRunRequest, pconnector.SourceRunResponse]
}

func (s sourceStream) Client() pconnector.SourceRunStreamClient { panic("server side only") }

// Send copies the records, as gRPC serializes a message before Send returns:
// the server may reuse its slice afterwards.
func (s sourceStream) Send(resp pconnector.SourceRunResponse) error {
	resp.Records = slices.Clone(resp.Records)
	return s.stream.Send(resp)
}
func (s sourceStream) Server() pconnector.SourceRunStreamServer { return s }

type destinationStream struct {
	*stream[pconnector.DestinationRunRequest, pconnector.DestinationRunResponse]
}

func (s destinationStream) Client() pconnector.DestinationRunStreamClient {
	panic("server side only")
}
func (s destinationStream) Server() pconnector.DestinationRunStreamServer { return s }

// fakeSource emits records with positions "1", "2", ... after its Open
// position, up to limit, then blocks. It records every call.
type fakeSource struct {
	limit     int
	readPanic bool
	badPos    bool // emit a record without a position

	mu       sync.Mutex
	calls    []string
	opened   opencdc.Position
	next     int
	acked    []string
	torndown bool
}

func (s *fakeSource) record(call string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
}

func (s *fakeSource) Open(_ context.Context, from opencdc.Position) error {
	s.record("Open")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opened = from
	if from != nil {
		n, err := strconv.Atoi(string(from))
		if err != nil {
			return fmt.Errorf("bad position %q", from)
		}
		s.next = n
	}
	return nil
}

func (s *fakeSource) Read(ctx context.Context) (opencdc.Record, error) {
	if s.readPanic {
		panic("read exploded")
	}
	s.mu.Lock()
	if s.next >= s.limit {
		s.mu.Unlock()
		<-ctx.Done()
		return opencdc.Record{}, ctx.Err()
	}
	s.next++
	n := s.next
	s.mu.Unlock()
	r := opencdc.Record{Position: opencdc.Position(strconv.Itoa(n)), Operation: opencdc.OperationCreate}
	if s.badPos {
		r.Position = nil
	}
	return r, nil
}

func (s *fakeSource) Ack(_ context.Context, pos opencdc.Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acked = append(s.acked, string(pos))
	return nil
}

func (s *fakeSource) Teardown(context.Context) error {
	s.record("Teardown")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.torndown = true
	return nil
}

func (s *fakeSource) OnCreated(context.Context) error {
	s.record("OnCreated")
	return nil
}

// fakeDestination writes by appending to written; write decides each
// call's outcome and may block.
type fakeDestination struct {
	write func(records []opencdc.Record) (int, error)

	mu       sync.Mutex
	calls    []string
	written  []string
	torndown bool
}

func (d *fakeDestination) Open(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, "Open")
	return nil
}

func (d *fakeDestination) Write(_ context.Context, records []opencdc.Record) (int, error) {
	n, err := len(records), error(nil)
	if d.write != nil {
		n, err = d.write(records)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := 0; i < n && i < len(records); i++ {
		d.written = append(d.written, string(records[i].Position))
	}
	return n, err
}

func (d *fakeDestination) Teardown(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, "Teardown")
	d.torndown = true
	return nil
}

func (d *fakeDestination) OnDeleted(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, "OnDeleted")
	return nil
}

func records(positions ...string) []opencdc.Record {
	out := make([]opencdc.Record, len(positions))
	for i, p := range positions {
		out[i] = opencdc.Record{Position: opencdc.Position(p)}
	}
	return out
}

// batchSource is a fakeSource that also reads in batches.
type batchSource struct {
	*fakeSource
	asked []int // the max of every ReadBatch call
}

func (s *batchSource) ReadBatch(ctx context.Context, max int) ([]opencdc.Record, error) {
	s.mu.Lock()
	s.asked = append(s.asked, max)
	s.mu.Unlock()
	var out []opencdc.Record
	for len(out) < max {
		s.mu.Lock()
		more := s.next < s.limit
		s.mu.Unlock()
		if !more && len(out) > 0 {
			break
		}
		r, err := s.Read(ctx)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// testDestination is what the tests' fake destinations implement: the
// methods of package sdk's Destination. A fake may also have the lifecycle
// hooks (OnCreated, OnUpdated, OnDeleted).
type testDestination interface {
	Open(ctx context.Context) error
	Write(ctx context.Context, records []opencdc.Record) (int, error)
	Teardown(ctx context.Context) error
}

// testSource is what the tests' fake sources implement: the methods of
// package sdk's Source. A fake may also have ReadBatch, Ack and the
// lifecycle hooks.
type testSource interface {
	Open(ctx context.Context, from opencdc.Position) error
	Read(ctx context.Context) (opencdc.Record, error)
	Teardown(ctx context.Context) error
}

// destinationOf returns what the server runs for the fake d, as package
// sdk resolves a destination: d's calls, the policies, the hooks d has,
// and testClassify for its Write errors.
func destinationOf(d testDestination, batch batcher.Policy, retry Retry) Destination {
	calls := callsWithHooks(d)
	calls.Open = func(ctx context.Context, _ opencdc.Position) error { return d.Open(ctx) }
	calls.Teardown = d.Teardown
	return Destination{Calls: calls, Write: d.Write, Batch: batch, Retry: retry, Classify: testClassify}
}

// sourceOf returns what the server runs for the fake s, as package sdk
// resolves a source: its ReadBatch when it has one, else its Read one
// record at a time; its Ack if it has one; and the hooks it has.
func sourceOf(s testSource, batch batcher.Policy) Source {
	calls := callsWithHooks(s)
	calls.Open, calls.Teardown = s.Open, s.Teardown
	out := Source{Calls: calls, Batch: batch}
	if br, ok := s.(interface {
		ReadBatch(ctx context.Context, max int) ([]opencdc.Record, error)
	}); ok {
		out.Read, out.Batched = br.ReadBatch, true
	} else {
		out.Read = func(ctx context.Context, _ int) ([]opencdc.Record, error) {
			rec, err := s.Read(ctx)
			if err != nil {
				return nil, err
			}
			return []opencdc.Record{rec}, nil
		}
	}
	if a, ok := s.(interface {
		Ack(ctx context.Context, position opencdc.Position) error
	}); ok {
		out.Ack = a.Ack
	}
	return out
}

// callsWithHooks returns the lifecycle hooks the fake c has.
func callsWithHooks(c any) Calls {
	var h Calls
	if x, ok := c.(interface{ OnCreated(context.Context) error }); ok {
		h.OnCreated = x.OnCreated
	}
	if x, ok := c.(interface {
		OnUpdated(context.Context, map[string]string) error
	}); ok {
		h.OnUpdated = x.OnUpdated
	}
	if x, ok := c.(interface{ OnDeleted(context.Context) error }); ok {
		h.OnDeleted = x.OnDeleted
	}
	return h
}

// testConnector is a Connector whose roles the tests build with functions;
// a nil one is a role the plugin does not play.
type testConnector struct {
	source      func(map[string]string) (Source, error)
	destination func(map[string]string) (Destination, error)
}

func (testConnector) Specification() pconnector.Specification {
	return pconnector.Specification{Name: "test", Version: "v0.1.0"}
}

func (c testConnector) ConfigureSource(raw map[string]string) (Source, error) {
	if c.source == nil {
		return Source{}, errors.New("this plugin is not a source")
	}
	return c.source(raw)
}

func (c testConnector) ConfigureDestination(raw map[string]string) (Destination, error) {
	if c.destination == nil {
		return Destination{}, errors.New("this plugin is not a destination")
	}
	return c.destination(raw)
}

// testSourceServer returns a server of the source configure builds.
func testSourceServer(configure func(map[string]string) (Source, error)) *sourceServer {
	return newSourceServer(testConnector{source: configure}, discard)
}

// testDestinationServer returns a server of the destination configure
// builds.
func testDestinationServer(configure func(map[string]string) (Destination, error)) *destinationServer {
	return newDestinationServer(testConnector{destination: configure}, discard)
}

// testClassify classifies a Write error by the marks of the tests' error
// types (faultErr, retryableErr, notReally), found through wrapping, as
// package sdk's classifier does with its own: a record fault wins, as
// retrying a record that cannot be written would only delay, then nack,
// those after it.
func testClassify(err error) Fault {
	var f interface{ RecordFault() bool }
	if errors.As(err, &f) && f.RecordFault() {
		return RecordFault
	}
	var r interface{ Retryable() bool }
	if errors.As(err, &r) && r.Retryable() {
		return Retryable
	}
	return Unclassified
}
