package plugin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
)

// callLog records a fake's calls, and whether it was torn down; its lock
// is the fake's.
type callLog struct {
	mu       sync.Mutex
	calls    []string
	torndown bool
}

func (c *callLog) record(call string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, call)
	c.torndown = c.torndown || call == "Teardown"
}

// Teardown is a fake's Teardown: it only records the call.
func (c *callLog) Teardown(context.Context) error {
	c.record("Teardown")
	return nil
}

// count returns how many times call was made.
func (c *callLog) count(call string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, made := range c.calls {
		if made == call {
			n++
		}
	}
	return n
}

// fakeSource emits records with positions "1", "2", ... after its Open
// position, up to limit, then blocks. It records every call.
type fakeSource struct {
	limit     int
	readPanic bool
	badPos    bool // emit a record without a position

	callLog
	opened opencdc.Position
	next   int
	acked  []string
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

func (s *fakeSource) OnCreated(context.Context) error {
	s.record("OnCreated")
	return nil
}

// read returns how many records s has read.
func (s *fakeSource) read() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
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

// fakeDestination writes every record, appending its position to written.
// It records every call.
type fakeDestination struct {
	callLog
	written []string
}

func (d *fakeDestination) Open(context.Context) error {
	d.record("Open")
	return nil
}

func (d *fakeDestination) Write(_ context.Context, records []opencdc.Record) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range records {
		d.written = append(d.written, string(r.Position))
	}
	return len(records), nil
}

func (d *fakeDestination) OnDeleted(context.Context) error {
	d.record("OnDeleted")
	return nil
}

// writeLog is a destination whose Writes outcome decides, each taking
// delay; it logs every Write's records and when it began, since start, and
// fails t if Write is ever called concurrently.
type writeLog struct {
	t       *testing.T
	start   time.Time
	outcome func(batch []opencdc.Record) (int, error) // nil: all written
	delay   time.Duration                             // each Write takes this long

	mu      sync.Mutex
	active  int
	batches []string // "[1 2 3]@1s"
}

func (w *writeLog) Open(context.Context) error     { return nil }
func (w *writeLog) Teardown(context.Context) error { return nil }

func (w *writeLog) Write(_ context.Context, records []opencdc.Record) (int, error) {
	w.mu.Lock()
	w.active++
	if w.active > 1 {
		w.t.Error("Write called concurrently with itself")
	}
	w.batches = append(w.batches, fmt.Sprintf("%s@%v", positionList(records), time.Since(w.start)))
	w.mu.Unlock()
	if w.delay > 0 {
		time.Sleep(w.delay)
	}
	defer func() {
		w.mu.Lock()
		w.active--
		w.mu.Unlock()
	}()
	if w.outcome != nil {
		return w.outcome(records)
	}
	return len(records), nil
}

// got returns the Writes logged so far.
func (w *writeLog) got() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.batches...)
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

// testFactory is a Factory whose roles the tests build with functions;
// a nil one is a role the plugin does not play.
type testFactory struct {
	source      func(map[string]string) (Source, error)
	destination func(map[string]string) (Destination, error)
}

func (testFactory) Specification() pconnector.Specification {
	return pconnector.Specification{Name: "test", Version: "v0.1.0"}
}

func (c testFactory) ConfigureSource(raw map[string]string) (Source, error) {
	if c.source == nil {
		return Source{}, errors.New("this plugin is not a source")
	}
	return c.source(raw)
}

func (c testFactory) ConfigureDestination(raw map[string]string) (Destination, error) {
	if c.destination == nil {
		return Destination{}, errors.New("this plugin is not a destination")
	}
	return c.destination(raw)
}

// testSourceServer returns a server of the source configure builds.
func testSourceServer(configure func(map[string]string) (Source, error)) *sourceServer {
	return newSourceServer(testFactory{source: configure}, discard)
}

// testDestinationServer returns a server of the destination configure
// builds.
func testDestinationServer(configure func(map[string]string) (Destination, error)) *destinationServer {
	return newDestinationServer(testFactory{destination: configure}, discard)
}

// sourceServerOf returns a server of the fake src under policy p, not yet
// configured.
func sourceServerOf(src testSource, p batcher.Policy) *sourceServer {
	return testSourceServer(func(map[string]string) (Source, error) { return sourceOf(src, p), nil })
}

// destinationServerOf returns a server of the fake dst under the batching
// and retry policies, not yet configured.
func destinationServerOf(dst testDestination, batch batcher.Policy, retry Retry) *destinationServer {
	return testDestinationServer(func(map[string]string) (Destination, error) { return destinationOf(dst, batch, retry), nil })
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
