package plugin

import (
	"context"
	"strconv"
	"testing"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
)

type nopDestination struct{}

func (nopDestination) Open(context.Context) error                               { return nil }
func (nopDestination) Write(_ context.Context, r []opencdc.Record) (int, error) { return len(r), nil }
func (nopDestination) Teardown(context.Context) error                           { return nil }

// BenchmarkDestinationPath measures the server's destination path per
// record, one record per message as Conduit's default engine sends them:
// receive, collect, Write, settle and send the acks. The in-memory stream's
// channel hand-offs are part of the figure.
func BenchmarkDestinationPath(b *testing.B) {
	for _, p := range []batcher.Policy{{}, {Count: 1000}, {Count: 1000, Bytes: 1 << 20, Delay: 100 * 1e6}} {
		b.Run(fmtPolicy(p), func(b *testing.B) {
			d := testDestinationServer(func(map[string]string) (Destination, error) {
				return destinationOf(nopDestination{}, p, Retry{}), nil
			})
			if _, err := d.Configure(b.Context(), pconnector.DestinationConfigureRequest{}); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(b.Context())
			st, runDone := runDestination(ctx, d)
			acked := make(chan int)
			go func() {
				n := 0
				for n < b.N {
					n += len((<-st.out).Acks)
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
				st.in <- pconnector.DestinationRunRequest{Records: recs[i%len(recs)]}
			}
			if _, err := d.Stop(b.Context(), pconnector.DestinationStopRequest{LastPosition: recs[(b.N-1)%len(recs)][0].Position}); err != nil {
				b.Fatal(err)
			}
			<-acked
			b.StopTimer()
			cancel()
			<-runDone
			if _, err := d.Teardown(b.Context(), pconnector.DestinationTeardownRequest{}); err != nil {
				b.Fatal(err)
			}
		})
	}
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
// the figure.
func BenchmarkSourcePath(b *testing.B) {
	src := &fakeSource{limit: b.N}
	s := testSourceServer(func(map[string]string) (Source, error) {
		return sourceOf(src, batcher.Policy{Count: 1000}), nil
	})
	if _, err := s.Configure(b.Context(), pconnector.SourceConfigureRequest{}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Open(b.Context(), pconnector.SourceOpenRequest{}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(b.Context())
	b.ReportAllocs()
	b.ResetTimer()
	st, runDone := runSource(ctx, s)
	for n := 0; n < b.N; {
		n += len((<-st.out).Records)
	}
	b.StopTimer()
	cancel()
	<-runDone
	if _, err := s.Teardown(b.Context(), pconnector.SourceTeardownRequest{}); err != nil {
		b.Fatal(err)
	}
}
