package middleware_test

import (
	"context"
	"fmt"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/batcher"
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
	d := middleware.Chain(count, middleware.BatchDestination(batcher.Policy{Count: 100}))(printer{})
	_, _ = d.Write(context.Background(), make([]opencdc.Record, 3))
	policy, _ := middleware.PolicyOf(d)
	fmt.Println(written, "written; batches of", policy.Count)
	// Output:
	// writing 3 records
	// 3 written; batches of 100
}

func ExampleBatching() {
	settings := middleware.Batching{Size: 1000, Delay: 100 * time.Millisecond}
	fmt.Printf("%+v\n", settings.Policy())
	// Output: {Count:1000 Bytes:0 Delay:100ms}
}
