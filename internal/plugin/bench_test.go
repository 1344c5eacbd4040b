package plugin

import (
	"context"
	"strconv"
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/metrics"
)

type nopDestination struct{}

func (nopDestination) Open(context.Context) error                               { return nil }
func (nopDestination) Write(_ context.Context, r []opencdc.Record) (int, error) { return len(r), nil }
func (nopDestination) Teardown(context.Context) error                           { return nil }

// BenchmarkDestinationPath measures the server's destination path per
// record, one record per message as Conduit's default engine sends them:
// receive, collect, Write, settle and send the acks. The in-memory stream's
// channel hand-offs are part of the figure. With metrics=on the server
// measures what it does (sdk.metrics.*), which it does not by default.
func BenchmarkDestinationPath(b *testing.B) {
	for _, p := range []batcher.Policy{{}, {Count: 1000}, {Count: 1000, Bytes: 1 << 20, Delay: 100 * 1e6}} {
		for _, measured := range []bool{false, true} {
			b.Run(fmtPolicy(p)+",metrics="+onOff(measured), func(b *testing.B) {
				benchmarkDestinationPath(b, p, measured)
			})
		}
	}
}

func benchmarkDestinationPath(b *testing.B, p batcher.Policy, measured bool) {
	d := destinationServerOf(nopDestination{}, p, Retry{})
	if measured {
		_, d = measuredDestination(nopDestination{}, p, Retry{})
	}
	open(b, &d.instance)
	r := newDestinationRun(b, d).run()
	acked := make(chan int)
	go func() {
		n := 0
		for n < b.N {
			n += len((<-r.st.out).Acks)
		}
		acked <- n
	}()
	recs := make([][]opencdc.Record, 1000)
	for i := range recs {
		recs[i] = []opencdc.Record{{Position: opencdc.Position(strconv.Itoa(i)), Payload: opencdc.Change{After: opencdc.RawData("payload")}}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r.st.in <- pconnector.DestinationRunRequest{Records: recs[i%len(recs)]}
	}
	if _, err := r.d.Stop(b.Context(), pconnector.DestinationStopRequest{LastPosition: recs[(b.N-1)%len(recs)][0].Position}); err != nil {
		b.Fatal(err)
	}
	<-acked
	b.StopTimer()
	r.end()
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func fmtPolicy(p batcher.Policy) string {
	if p == (batcher.Policy{}) {
		return "unbatched"
	}
	return "count=" + strconv.Itoa(p.Count) + ",bytes=" + strconv.Itoa(p.Bytes) + ",delay=" + p.Delay.String()
}

// BenchmarkSourcePath measures the server's source path per record for a
// source that reads one record per Read, as sources without ReadBatch do:
// read, collect, send. The in-memory stream's channel hand-offs are part of
// the figure, with and without metrics.
func BenchmarkSourcePath(b *testing.B) {
	for _, measured := range []bool{false, true} {
		b.Run("metrics="+onOff(measured), func(b *testing.B) { benchmarkSourcePath(b, measured) })
	}
}

func benchmarkSourcePath(b *testing.B, measured bool) {
	s := testSourceServer(func(map[string]string) (Source, error) {
		src := sourceOf(&fakeSource{limit: b.N}, batcher.Policy{Count: 1000})
		if measured {
			src.Metrics.Set = metrics.New(metrics.Labels{ConnectorID: "p:src", Plugin: "test", Version: "v0.1.0", Role: "source"})
		}
		return src, nil
	})
	open(b, &s.instance)
	r := newSourceRun(b, s)
	b.ReportAllocs()
	b.ResetTimer()
	r.run()
	for n := 0; n < b.N; {
		n += len((<-r.st.out).Records)
	}
	b.StopTimer()
	r.end()
}

// deepDestination writes nothing, on a stack as deep as a database
// client's Write (the Postgres destination's plans its records on about
// 32 KiB).
type deepDestination struct{ nopDestination }

func (deepDestination) Write(_ context.Context, r []opencdc.Record) (int, error) {
	return len(r) + deepStack(16), nil
}

// deepStack takes about 2 KiB of stack per level.
//
//go:noinline
func deepStack(levels int) int {
	var frame [2 << 10]byte
	frame[levels] = byte(levels)
	if levels == 0 {
		return int(frame[0])
	}
	return deepStack(levels-1) + int(frame[levels]) - levels
}

// BenchmarkDestinationRoundTrip measures one record's way through the
// destination server while nothing else is in flight, as below a
// pipeline's capacity: a message of one record, then nothing until its
// ack; sdk.batch.size 1, one Write at a time and auto. Its Write needs a
// deep stack, as a database client's does, which a Write started on a
// fresh goroutine grows anew.
func BenchmarkDestinationRoundTrip(b *testing.B) {
	for _, c := range []Concurrency{{Max: 1}, {Max: 32, Adaptive: true, ByKey: true}} {
		name := "concurrency=1"
		if c.Adaptive {
			name = "concurrency=auto"
		}
		b.Run(name, func(b *testing.B) {
			d := testDestinationServer(func(map[string]string) (Destination, error) {
				dst := destinationOf(deepDestination{}, batcher.Policy{Count: 1}, Retry{})
				dst.Concurrency = c
				return dst, nil
			})
			open(b, &d.instance)
			r := newDestinationRun(b, d).run()
			recs := make([]opencdc.Record, 1000)
			for i := range recs {
				recs[i] = opencdc.Record{Position: opencdc.Position(strconv.Itoa(i)), Key: opencdc.StructuredData{"id": strconv.Itoa(i)}, Payload: opencdc.Change{After: opencdc.RawData("payload")}}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				r.st.in <- pconnector.DestinationRunRequest{Records: recs[i%len(recs) : i%len(recs)+1]}
				<-r.st.out
			}
			b.StopTimer()
			r.end()
		})
	}
}
