package httpsink_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	httpsink "github.com/connkit/connkit/examples/http"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// The destination is an sdk.ConcurrentDestination that lets any record go
// in any Write.
func TestTheDestinationTakesConcurrentWritesOfAnyRecords(t *testing.T) {
	is := is.New(t)
	d, err := httpsink.Connector.Destination.New(map[string]string{"url": "http://127.0.0.1:1/"})
	is.NoErr(err)
	cd, ok := d.(sdk.ConcurrentDestination)
	is.True(ok)
	is.Equal(cd.WriteSplit(), sdk.SplitFreely)
}

// Writes called from several goroutines at once, against a server that
// takes its time, refuses bad records and now and then fails, deliver
// every good record exactly once: each writer goes on as the SDK does,
// with the records after a record fault and again with those a retryable
// error left. The first request of each writer is held until all of them
// have arrived, which proves that the Writes run together.
func TestConcurrentWritesDeliverEveryRecordOnce(t *testing.T) {
	const writers, batches, size = 8, 20, 10
	var arrived atomic.Int32
	together := make(chan struct{})
	var requests atomic.Int32
	e := newEndpoint(t, func(w http.ResponseWriter, req *http.Request, records []sdk.Record) bool {
		n := arrived.Add(1)
		if n == writers {
			close(together)
		}
		if n <= writers {
			select {
			case <-together:
			case <-time.After(time.Minute):
				t.Errorf("%d of %d writers' first requests arrived: the Writes do not run together", arrived.Load(), writers)
			}
		}
		time.Sleep(time.Duration(rand.IntN(1000)) * time.Microsecond) // the server's latency
		if requests.Add(1)%7 == 0 {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return false
		}
		return refuseBad(w, req, records)
	})
	d := e.open(t)

	var want []string
	var wg sync.WaitGroup
	for w := range writers {
		var records []sdk.Record
		for b := range batches {
			batch := make([]sdk.Record, size)
			for i := range batch {
				id := (w*batches+b)*size + i + 1
				if id%13 == 0 {
					batch[i] = badRecord(id)
					continue
				}
				batch[i] = testRecord(id)
				want = append(want, string(batch[i].Position))
			}
			records = append(records, batch...)
		}
		wg.Go(func() {
			for b := range batches {
				if err := writeAll(t.Context(), d, records[b*size:(b+1)*size]); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()

	got := make([]string, 0, len(want))
	for _, r := range e.received() {
		got = append(got, string(r.Position))
	}
	slices.Sort(got)
	slices.Sort(want)
	is := is.New(t)
	is.Equal(len(got), len(want))
	is.Equal(got, want) // every good record once, no bad one
}

// writeAll writes records as the SDK does with a Write's outcomes: after
// a record fault it goes on with the records after the one at fault,
// after a retryable error with the records not written (at once: the
// server here is not to be spared).
func writeAll(ctx context.Context, d sdk.Destination, records []sdk.Record) error {
	for attempts := 0; len(records) > 0; attempts++ {
		if attempts == 1000 {
			return fmt.Errorf("%d records still not written after %d attempts", len(records), attempts)
		}
		n, err := d.Write(ctx, records)
		switch {
		case err == nil && n == len(records):
			return nil
		case n < 0 || n > len(records) || err == nil:
			return fmt.Errorf("Write returned %d of %d records and %v", n, len(records), err)
		case sdk.IsRecordFault(err):
			records = records[n+1:]
		case sdk.IsRetryable(err):
			records = records[n:]
		default:
			return err
		}
	}
	return nil
}
