package plugin

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
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
// flow-control window is a sub-benchmark (gRPC's minimum, the plugin's,
// 1 MiB, and gRPC's bandwidth-delay estimate): rec/s is the throughput and
// ack-p50-ms the median time from sending a record to receiving its ack.
// The client sends as fast as it can, so what waits in the window and the
// hold bound is latency here.
func BenchmarkDestinationOverGRPC(b *testing.B) {
	for _, w := range []int32{64 << 10, windowSize, 1 << 20, 0} {
		name := "window=bdp"
		if w > 0 {
			name = "window=" + strconv.Itoa(int(w>>10)) + "KiB"
		}
		b.Run(name, func(b *testing.B) { benchmarkDestinationOverGRPC(b, w) })
	}
}

func benchmarkDestinationOverGRPC(b *testing.B, window int32) {
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	dst := destinationOverGRPC(b, window)
	if _, err := dst.Configure(ctx, pconnector.DestinationConfigureRequest{}); err != nil {
		b.Fatal(err)
	}
	if _, err := dst.Open(ctx, pconnector.DestinationOpenRequest{}); err != nil {
		b.Fatal(err)
	}
	stream := dst.NewStream()
	if err := dst.Run(ctx, stream); err != nil {
		b.Fatal(err)
	}
	client := stream.Client()

	payload := opencdc.RawData(strings.Repeat("x", 1024))
	sentAt := make([]time.Time, b.N)
	var mu sync.Mutex // guards sentAt between the sender and the ack reader
	latencies := make([]time.Duration, 0, b.N)
	acked := make(chan error, 1)
	go func() {
		for len(latencies) < b.N {
			resp, err := client.Recv()
			if err != nil {
				acked <- err
				return
			}
			now := time.Now()
			mu.Lock()
			for _, a := range resp.Acks {
				i, _ := strconv.Atoi(string(a.Position))
				latencies = append(latencies, now.Sub(sentAt[i]))
			}
			mu.Unlock()
		}
		acked <- nil
	}()
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		r := opencdc.Record{Position: opencdc.Position(strconv.Itoa(i)), Operation: opencdc.OperationCreate, Payload: opencdc.Change{After: payload}}
		mu.Lock()
		sentAt[i] = time.Now()
		mu.Unlock()
		if err := client.Send(pconnector.DestinationRunRequest{Records: []opencdc.Record{r}}); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-acked; err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(latencies)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rec/s")
	b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds())/1000, "ack-p50-ms")
	cancel()
	if _, err := dst.Teardown(context.Background(), pconnector.DestinationTeardownRequest{}); err != nil {
		b.Fatal(err)
	}
}

// destinationOverGRPC serves a destination that writes nothing, in
// batches of up to 1000, on loopback with the given flow-control window,
// and returns the protocol's client for it.
func destinationOverGRPC(b *testing.B, window int32) *clientv2.DestinationPluginClient {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := grpc.NewServer(serverOptions(Settings{MaxReceiveSize: DefaultMaxReceiveSize}, discard, window)...)
	registerDestinationV2(s, newDestinationServer(func(map[string]string) (Destination, error) {
		return destinationOf(nopDestination{}, batcher.Policy{Count: 1000}, Retry{}), nil
	}, discard), DefaultMaxReceiveSize)
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
	return clientv2.NewDestinationPluginClient(conn)
}
