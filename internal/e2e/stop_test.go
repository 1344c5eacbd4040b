package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/host"
	"github.com/matryer/is"
)

// TestStopRightBehindTheRecords sends a destination plugin a few records,
// one per message, and Stop right behind them, as Conduit does when a
// pipeline stops, with a batch that would wait long to fill: the plugin
// may get Stop before its Run has taken the stream. Stop must still make
// it write and ack every record at once, not after sdk.batch.delay.
func TestStopRightBehindTheRecords(t *testing.T) {
	const delay = 10 * time.Second
	for attempt := range 5 {
		t.Run(fmt.Sprint(attempt), func(t *testing.T) {
			is := is.New(t)
			dst := destination(t, host.Options{})
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			_, err := dst.Configure(ctx, pconnector.DestinationConfigureRequest{Config: map[string]string{
				"level": "trace", "sdk.batch.size": "10", "sdk.batch.delay": delay.String(),
			}})
			is.NoErr(err)
			_, err = dst.Open(ctx, pconnector.DestinationOpenRequest{})
			is.NoErr(err)
			stream := dst.NewStream()
			is.NoErr(dst.Run(ctx, stream))
			var last opencdc.Position
			for i := range 7 {
				last = opencdc.Position(fmt.Sprint(i))
				is.NoErr(stream.Client().Send(pconnector.DestinationRunRequest{Records: []opencdc.Record{{
					Position: last, Operation: opencdc.OperationCreate, Payload: opencdc.Change{After: opencdc.RawData("x")},
				}}}))
			}
			start := time.Now()
			stopped := make(chan error, 1)
			go func() {
				_, err := dst.Stop(ctx, pconnector.DestinationStopRequest{LastPosition: last})
				stopped <- err
			}()
			acked := 0
			for acked < 7 {
				resp, err := stream.Client().Recv()
				is.NoErr(err)
				for _, a := range resp.Acks {
					is.Equal(a.Error, "")
					is.Equal(string(a.Position), fmt.Sprint(acked))
					acked++
				}
			}
			is.NoErr(<-stopped)
			took := time.Since(start)
			t.Logf("7 records acked and Stop returned %v after Stop", took)
			if took >= delay/2 {
				t.Errorf("the records waited %v after Stop: Stop did not make the plugin write at once", took)
			}
			_, err = dst.Teardown(ctx, pconnector.DestinationTeardownRequest{})
			is.NoErr(err)
		})
	}
}
