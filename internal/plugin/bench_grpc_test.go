package plugin

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	clientv2 "github.com/conduitio/conduit-connector-protocol/pconnector/v2/client"
	"github.com/connkit/connkit/batcher"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// BenchmarkDestinationOverGRPC measures the destination path as Conduit's
// default engine drives it, over real gRPC on loopback: one 1 KiB record
// per message with the protocol's own client, as fast as the stream takes
// them, batches of up to 1000 and a connector that writes nothing. Each
// flow-control window is a sub-benchmark (gRPC's minimum, 256 KiB, 1 MiB,
// and gRPC's bandwidth-delay estimate, the plugin's): rec/s is the throughput and
// ack-p50-ms the median time from sending a record to receiving its ack.
// The client sends as fast as it can, so what waits in the window and the
// hold bound is latency here.
func BenchmarkDestinationOverGRPC(b *testing.B) {
	for _, w := range []int32{64 << 10, 256 << 10, 1 << 20, windowSize} {
		name := "window=bdp"
		if w > 0 {
			name = "window=" + strconv.Itoa(int(w>>10)) + "KiB"
		}
		b.Run(name, func(b *testing.B) { benchmarkDestinationOverGRPC(b, w) })
	}
}

func benchmarkDestinationOverGRPC(b *testing.B, window int32) {
	stream, stop := destinationOverGRPC(b, window, destinationServerOf(nopDestination{}, batcher.Policy{Count: 1000}, Retry{}))
	defer stop()
	client := stream.Client()
	payload := opencdc.RawData(strings.Repeat("x", 1024))
	timer := newAckTimer(b.N)
	acked := make(chan error, 1)
	go func() { acked <- timer.readAcks(client) }()
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		r := opencdc.Record{Position: opencdc.Position(strconv.Itoa(i)), Operation: opencdc.OperationCreate, Payload: opencdc.Change{After: payload}}
		timer.sending(i)
		if err := client.Send(pconnector.DestinationRunRequest{Records: []opencdc.Record{r}}); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-acked; err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rec/s")
	b.ReportMetric(float64(timer.median().Microseconds())/1000, "ack-p50-ms")
}

// BenchmarkDestinationLoneOverGRPC measures the destination path as
// Conduit's v2 engine drives it when its source sends one record a
// message (its builtin sources without batch settings): over real gRPC on
// loopback, one record, then nothing until its ack, with no batch
// settings and sdk.write.concurrency auto, the defaults. ns/op is a
// record's round trip; cpu-µs/op is the process's processor time per
// record, the protocol client's (Conduit's part) included.
func BenchmarkDestinationLoneOverGRPC(b *testing.B) {
	dst := destinationOf(nopDestination{}, batcher.Policy{}, Retry{})
	dst.Concurrency = Concurrency{Max: 32, Adaptive: true, ByKey: true}
	stream, stop := destinationOverGRPC(b, windowSize, testDestinationServer(func(map[string]string) (Destination, error) { return dst, nil }))
	defer stop()
	client := stream.Client()
	recs := make([]opencdc.Record, 1000)
	for i := range recs {
		recs[i] = opencdc.Record{Position: opencdc.Position(strconv.Itoa(i)), Operation: opencdc.OperationCreate, Key: opencdc.StructuredData{"id": i}, Payload: opencdc.Change{After: opencdc.RawData("payload")}}
	}
	b.ReportAllocs()
	cpu := processCPU(b)
	b.ResetTimer()
	for i := range b.N {
		if err := client.Send(pconnector.DestinationRunRequest{Records: recs[i%len(recs) : i%len(recs)+1]}); err != nil {
			b.Fatal(err)
		}
		if _, err := client.Recv(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU returns the processor time the process has used so far.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// ackTimer times records, at positions 0 to n-1, from their Send to their
// ack: the sender calls sending before each Send, and readAcks, in a
// goroutine of its own, takes the acks.
type ackTimer struct {
	mu        sync.Mutex  // guards sentAt between the sender and the ack reader
	sentAt    []time.Time // by position
	latencies []time.Duration
}

// newAckTimer returns an ackTimer for n records.
func newAckTimer(n int) *ackTimer {
	return &ackTimer{sentAt: make([]time.Time, n), latencies: make([]time.Duration, 0, n)}
}

// sending notes that the record at position i is sent now.
func (tm *ackTimer) sending(i int) {
	tm.mu.Lock()
	tm.sentAt[i] = time.Now()
	tm.mu.Unlock()
}

// readAcks receives acks from client until every record has one, noting
// each one's time since its sending, and returns the error that ended the
// stream before that, if any.
func (tm *ackTimer) readAcks(client pconnector.DestinationRunStreamClient) error {
	for len(tm.latencies) < len(tm.sentAt) {
		resp, err := client.Recv()
		if err != nil {
			return err
		}
		now := time.Now()
		tm.mu.Lock()
		for _, a := range resp.Acks {
			i, _ := strconv.Atoi(string(a.Position))
			tm.latencies = append(tm.latencies, now.Sub(tm.sentAt[i]))
		}
		tm.mu.Unlock()
	}
	return nil
}

// median returns the median of the latencies; call it once readAcks has
// returned nil.
func (tm *ackTimer) median() time.Duration {
	slices.Sort(tm.latencies)
	return tm.latencies[len(tm.latencies)/2]
}

// destinationOverGRPC serves d on loopback with the given flow-control
// window, configured, opened and running; it returns the protocol's Run
// stream, and stop, which tears it down.
func destinationOverGRPC(b *testing.B, window int32, d *destinationServer) (stream *clientv2.DestinationRunStream, stop func()) {
	ctx, cancel := context.WithCancel(b.Context())
	conn := serveOverGRPC(b, window, func(s *grpc.Server) {
		registerDestination(s, d, DefaultMaxReceiveSize)
	})
	plugin := clientv2.NewDestinationPluginClient(conn)
	if _, err := plugin.Configure(ctx, pconnector.DestinationConfigureRequest{}); err != nil {
		b.Fatal(err)
	}
	if _, err := plugin.Open(ctx, pconnector.DestinationOpenRequest{}); err != nil {
		b.Fatal(err)
	}
	stream = plugin.NewStream().(*clientv2.DestinationRunStream) // concrete, so that the compiler sees through Send and its records need not escape
	if err := plugin.Run(ctx, stream); err != nil {
		b.Fatal(err)
	}
	return stream, func() {
		cancel()
		if _, err := plugin.Teardown(context.Background(), pconnector.DestinationTeardownRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSourceOverGRPC measures the source path as Conduit drives it,
// over real gRPC on loopback with the plugin's window: a source that
// returns records with a raw payload of each size as fast as it is asked,
// batches of up to 1000, and the protocol's own client acking every
// message whole once it has it, as the v2 engine does.
func BenchmarkSourceOverGRPC(b *testing.B) {
	for _, size := range []int{1024, 10240} {
		b.Run("payload="+strconv.Itoa(size>>10)+"KiB", func(b *testing.B) { benchmarkSourceOverGRPC(b, size) })
	}
}

func benchmarkSourceOverGRPC(b *testing.B, size int) {
	payload := opencdc.RawData(strings.Repeat("x", size))
	var next int // owned by the plugin's reader
	client, stop := sourceOverGRPC(b, Source{Batched: true, Batch: batcher.Policy{Count: 1000}, Read: func(ctx context.Context, max int) ([]opencdc.Record, error) {
		recs := make([]opencdc.Record, max)
		for i := range recs {
			next++
			recs[i] = opencdc.Record{Position: opencdc.Position(strconv.Itoa(next)), Operation: opencdc.OperationCreate, Payload: opencdc.Change{After: payload}}
		}
		return recs, nil
	}})
	defer stop()
	b.ReportAllocs()
	b.SetBytes(int64(size))
	b.ResetTimer()
	start := time.Now()
	for n := 0; n < b.N; {
		resp, err := client.Recv()
		if err != nil {
			b.Fatal(err)
		}
		acks := make([]opencdc.Position, len(resp.Records))
		for i, r := range resp.Records {
			acks[i] = r.Position
		}
		if err := client.Send(pconnector.SourceRunRequest{AckPositions: acks}); err != nil {
			b.Fatal(err)
		}
		n += len(resp.Records)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rec/s")
}

// BenchmarkSourceLatencyOverGRPC measures what the source path adds to a
// record's latency when Conduit keeps up: a source that returns a record
// a millisecond, stamped with the time it returned it, served over real
// gRPC on loopback, and the protocol's own client taking every message as
// it comes; each record's time from its Read to the client's Recv. A bare
// gRPC stream that sends from the goroutine that made the record takes
// about as long on the same machine.
func BenchmarkSourceLatencyOverGRPC(b *testing.B) {
	client, stop := sourceOverGRPC(b, Source{Read: func(ctx context.Context, _ int) ([]opencdc.Record, error) {
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		at := time.Now().UnixNano()
		return []opencdc.Record{{Position: opencdc.Position(strconv.FormatInt(at, 10)), Operation: opencdc.OperationCreate}}, nil
	}})
	defer stop()
	var total time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; {
		resp, err := client.Recv()
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		for _, r := range resp.Records {
			at, _ := strconv.ParseInt(string(r.Position), 10, 64)
			total += now.Sub(time.Unix(0, at))
		}
		n += len(resp.Records)
	}
	b.StopTimer()
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/record")
}

// sourceOverGRPC serves src, given its Read and batching, over real gRPC
// on loopback with the plugin's window, configured, opened and running;
// it returns the protocol's client side of the Run stream, and stop, which
// tears it down.
func sourceOverGRPC(b *testing.B, src Source) (client pconnector.SourceRunStreamClient, stop func()) {
	ctx, cancel := context.WithCancel(b.Context())
	src.Calls = Calls{Open: func(context.Context, opencdc.Position) error { return nil }, Teardown: func(context.Context) error { return nil }}
	conn := serveOverGRPC(b, windowSize, func(s *grpc.Server) {
		registerSource(s, testSourceServer(func(map[string]string) (Source, error) { return src, nil }), DefaultMaxReceiveSize)
	})
	plugin := clientv2.NewSourcePluginClient(conn)
	if _, err := plugin.Configure(ctx, pconnector.SourceConfigureRequest{}); err != nil {
		b.Fatal(err)
	}
	if _, err := plugin.Open(ctx, pconnector.SourceOpenRequest{}); err != nil {
		b.Fatal(err)
	}
	stream := plugin.NewStream()
	if err := plugin.Run(ctx, stream); err != nil {
		b.Fatal(err)
	}
	return stream.Client(), func() {
		cancel()
		if _, err := plugin.Teardown(context.Background(), pconnector.SourceTeardownRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}

// serveOverGRPC serves what register registers on loopback with the given
// flow-control window and returns a connection to it; both end with b.
func serveOverGRPC(b *testing.B, window int32, register func(*grpc.Server)) *grpc.ClientConn {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := grpc.NewServer(serverOptions(Settings{MaxReceiveSize: DefaultMaxReceiveSize}, discard, window)...)
	register(s)
	served := make(chan struct{})
	go func() { defer close(served); _ = s.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = conn.Close()
		s.Stop()
		<-served
	})
	return conn
}
