package middleware_test

import (
	"context"
	"fmt"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/middleware"
)

type printer struct{}

func (printer) Open(context.Context) error     { return nil }
func (printer) Teardown(context.Context) error { return nil }
func (printer) Write(_ context.Context, r []opencdc.Record) (int, error) {
	fmt.Println("writing", len(r), "records")
	return len(r), nil
}

// counting is a middleware that counts the records written through it.
type counting struct {
	middleware.Destination
	n *int
}

func (c counting) Write(ctx context.Context, r []opencdc.Record) (int, error) {
	n, err := c.Destination.Write(ctx, r)
	*c.n += n
	return n, err
}

func (c counting) Unwrap() middleware.Destination { return c.Destination }

func ExampleChain() {
	written := 0
	count := func(d middleware.Destination) middleware.Destination { return counting{d, &written} }
	// At most 2 records per Write: the limiter splits the batch below the counter.
	d := middleware.Chain(count, middleware.LimitRate(1000, 2))(printer{})
	_, _ = d.Write(context.Background(), make([]opencdc.Record, 3))
	fmt.Println(written, "written")
	// Output:
	// writing 2 records
	// writing 1 records
	// 3 written
}

func ExampleBatching() {
	settings := middleware.Batching{Size: 1000, Delay: 100 * time.Millisecond}
	fmt.Printf("%+v\n", settings.Policy())
	// Output: {Count:1000 Bytes:0 Delay:100ms}
}

func ExampleRetry() {
	settings := middleware.DefaultRetry()
	var waits []time.Duration // the longest wait before each retry
	for retry := range settings.Attempts {
		waits = append(waits, settings.Backoff(retry))
	}
	fmt.Println(waits)
	fmt.Println(middleware.Retry{Attempts: 3, Delay: time.Second, MaxDelay: 100 * time.Millisecond}.Validate())
	// Output:
	// [100ms 200ms 400ms 800ms 1.6s 3.2s 6.4s 10s]
	// parameter "sdk.retry.maxDelay": got "100ms", expected at least the 1s of "sdk.retry.delay"
}
