package host

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	opencdcv1 "github.com/conduitio/conduit-commons/proto/opencdc/v1"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	connectorv2 "github.com/conduitio/conduit-connector-protocol/proto/connector/v2"
	"github.com/connkit/connkit/internal/wire"
	"github.com/matryer/is"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Run returns only once the goroutines it started are done: an OnAck still
// running (here, held until the test lets it go) holds Run back, and what
// OnAck did is the caller's to read when Run returns.
func TestPipelineRunWaitsForOnAck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		const records = 3
		release := make(chan struct{})
		var acked []string // written by OnAck, read after Run without a lock
		p := Pipeline{
			Source:      newFakeSource(records),
			Destination: newFakeDestination(records),
			Records:     records,
			PerMessage:  true,
			OnAck: func(pos opencdc.Position) {
				if string(pos) == strconv.Itoa(records) {
					<-release
				}
				acked = append(acked, string(pos))
			},
		}
		type outcome struct {
			res Result
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := p.Run(t.Context())
			done <- outcome{res, err}
		}()

		synctest.Wait() // everything is blocked: OnAck on release, Run on OnAck
		select {
		case <-done:
			close(release) // so that the bubble can end
			t.Fatal("Run returned while OnAck was still running")
		default:
		}
		close(release)
		out := <-done
		is.NoErr(out.err)
		is.Equal(out.res.Acked, int64(records))
		is.Equal(acked, []string{"1", "2", "3"}) // every ack passed to OnAck, in order
	})
}

// TestPipelineStoreEveryHoldsAcks: with StoreEvery, the acks the
// destination sends one by one reach the source as Conduit v0.19's Ack
// calls, one request each: a record's with PerMessage, a source message's
// otherwise, held until a store (here at the stop, before the first second
// has passed); and each record's latency from its readAt is measured.
func TestPipelineStoreEveryHoldsAcks(t *testing.T) {
	for _, perMessage := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			is := is.New(t)
			const records = 3
			src := newFakeSource(records)
			src.readAt = time.Now().Add(-time.Millisecond)
			res, err := Pipeline{Source: src, Destination: newFakeDestination(records), Records: records, PerMessage: perMessage, StoreEvery: time.Second}.Run(t.Context())
			is.NoErr(err)
			if perMessage {
				is.Equal(src.acked(), [][]string{{"1"}, {"2"}, {"3"}}) // an Ack call a record
			} else {
				is.Equal(src.acked(), [][]string{{"1", "2", "3"}}) // an Ack call a message
			}
			is.Equal(res.ReadLatencies, []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond})
		})
	}
}

// TestPipelineExactForwardsOnlyRecords: with Exact, of the ten records the
// source sends in one message, ahead of what was asked, the first three
// are forwarded and acked, the others dropped, never acked; the
// destination stops at the third.
func TestPipelineExactForwardsOnlyRecords(t *testing.T) {
	for _, perMessage := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			is := is.New(t)
			src, dst := newFakeSource(10), newFakeDestination(10)
			res, err := Pipeline{Source: src, Destination: dst, Records: 3, Exact: true, PerMessage: perMessage}.Run(t.Context())
			is.NoErr(err)
			is.Equal([]int64{res.Read, res.Acked, res.Dropped}, []int64{3, 3, 7})
			is.Equal(src.acked(), [][]string{{"1"}, {"2"}, {"3"}}) // the destination acks a record a message
			is.Equal(string(res.LastPosition), "10")               // where the source stopped
			is.Equal(string(dst.stoppedAt), "3")                   // the last record forwarded
		})
	}
}

// TestStoreSendsEveryCallAfterTheInterval: the Ack calls held go to the
// source, each in a request of its own, StoreEvery after the first of them
// was held, or at once when storeAcks of them wait.
func TestStoreSendsEveryCallAfterTheInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		src := &requestRecorder{}
		r := &run{Pipeline: Pipeline{PerMessage: true, StoreEvery: time.Second}, heldMore: make(chan struct{}, 1), done: make(chan error, 1), storeEnd: make(chan error, 1)}
		ctx, cancel := context.WithCancel(t.Context())
		stored := make(chan struct{})
		go func() { defer close(stored); r.store(ctx, src) }()
		hold := func(n int) {
			r.mu.Lock()
			for i := range n {
				r.holdCalls([][]byte{[]byte(strconv.Itoa(i))})
			}
			r.mu.Unlock()
			notify(r.heldMore)
		}

		hold(3)
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		is.Equal(src.count(), 0) // not stored yet
		hold(2)                  // the interval runs from the first
		time.Sleep(time.Millisecond)
		synctest.Wait()
		is.Equal(src.count(), 5) // a request a call

		hold(storeAcks)
		synctest.Wait()
		is.Equal(src.count(), 5+storeAcks) // at once, with no time passed
		cancel()
		<-stored
	})
}

// requestRecorder is a source's Run stream that counts the ack requests
// sent to it.
type requestRecorder struct {
	connectorv2.SourcePlugin_RunClient // nil: calling anything else panics
	mu                                 sync.Mutex
	n                                  int
}

func (s *requestRecorder) Send(*connectorv2.Source_Run_Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return nil
}

func (s *requestRecorder) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// fakeSource sends records "1".."n" in one message, then waits for its Run
// stream to end; its Stop returns "n". It keeps the ack requests it gets.
type fakeSource struct {
	pconnector.SourcePlugin // nil: calling anything else panics
	n                       int
	readAt                  time.Time // the records' opencdc.readAt; zero: none

	mu   sync.Mutex
	acks [][]string // the positions of each ack request
}

// acked returns the positions of each ack request so far.
func (s *fakeSource) acked() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acks
}

func newFakeSource(n int) *fakeSource { return &fakeSource{n: n} }

func (s *fakeSource) NewStream() pconnector.SourceRunStream { panic("not used by Pipeline") }

func (s *fakeSource) Stop(context.Context, pconnector.SourceStopRequest) (pconnector.SourceStopResponse, error) {
	return pconnector.SourceStopResponse{LastPosition: opencdc.Position(strconv.Itoa(s.n))}, nil
}

func (s *fakeSource) Teardown(context.Context, pconnector.SourceTeardownRequest) (pconnector.SourceTeardownResponse, error) {
	return pconnector.SourceTeardownResponse{}, nil
}

func (s *fakeSource) runProto(ctx context.Context, _ ...grpc.CallOption) (connectorv2.SourcePlugin_RunClient, error) {
	resp := &connectorv2.Source_Run_Response{}
	for i := 1; i <= s.n; i++ {
		r := &opencdcv1.Record{Position: []byte(strconv.Itoa(i))}
		if !s.readAt.IsZero() {
			r.Metadata = map[string]string{opencdc.MetadataReadAt: strconv.FormatInt(s.readAt.UnixNano(), 10)}
		}
		resp.Records = append(resp.Records, r)
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		return nil, err
	}
	return &fakeSourceStream{ctx: ctx, first: b, src: s}, nil
}

type fakeSourceStream struct {
	connectorv2.SourcePlugin_RunClient // nil: calling anything else panics
	ctx                                context.Context
	first                              []byte // the message RecvMsg returns first
	src                                *fakeSource
}

func (s *fakeSourceStream) RecvMsg(m any) error {
	if b := s.first; b != nil {
		s.first = nil
		return m.(wire.Unmarshaler).UnmarshalWire(b)
	}
	<-s.ctx.Done()
	return s.ctx.Err()
}

func (s *fakeSourceStream) Send(req *connectorv2.Source_Run_Request) error {
	var positions []string
	for _, p := range req.GetAckPositions() {
		positions = append(positions, string(p))
	}
	s.src.mu.Lock()
	s.src.acks = append(s.src.acks, positions)
	s.src.mu.Unlock()
	return s.ctx.Err()
}

// fakeDestination acks every record it receives, each in a message of its
// own, and keeps the position Stop gets.
type fakeDestination struct {
	pconnector.DestinationPlugin // nil: calling anything else panics
	n                            int
	stoppedAt                    opencdc.Position
}

func newFakeDestination(n int) *fakeDestination { return &fakeDestination{n: n} }

func (d *fakeDestination) NewStream() pconnector.DestinationRunStream {
	panic("not used by Pipeline")
}

func (d *fakeDestination) Stop(_ context.Context, req pconnector.DestinationStopRequest) (pconnector.DestinationStopResponse, error) {
	d.stoppedAt = req.LastPosition
	return pconnector.DestinationStopResponse{}, nil
}

func (d *fakeDestination) Teardown(context.Context, pconnector.DestinationTeardownRequest) (pconnector.DestinationTeardownResponse, error) {
	return pconnector.DestinationTeardownResponse{}, nil
}

func (d *fakeDestination) runProto(ctx context.Context, _ ...grpc.CallOption) (connectorv2.DestinationPlugin_RunClient, error) {
	return &fakeDestinationStream{ctx: ctx, acks: make(chan []byte, d.n)}, nil
}

type fakeDestinationStream struct {
	connectorv2.DestinationPlugin_RunClient // nil: calling anything else panics
	ctx                                     context.Context
	acks                                    chan []byte
}

func (s *fakeDestinationStream) SendMsg(m any) error {
	b, err := m.(wire.Marshaler).MarshalWire()
	if err != nil {
		return err
	}
	var req connectorv2.Destination_Run_Request
	if err := proto.Unmarshal(b, &req); err != nil {
		return err
	}
	for _, r := range req.Records {
		s.acks <- r.Position
	}
	return s.ctx.Err()
}

func (s *fakeDestinationStream) Recv() (*connectorv2.Destination_Run_Response, error) {
	select {
	case pos := <-s.acks:
		return &connectorv2.Destination_Run_Response{Acks: []*connectorv2.Destination_Run_Response_Ack{{Position: pos}}}, nil
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
}
