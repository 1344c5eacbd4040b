package metrics_test

import (
	"context"
	"time"

	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/metrics"
)

// Sink is a destination that counts what it writes, by collection, and
// times its flushes: two metrics of its own, made in Open, served beside
// the SDK's when the pipeline sets sdk.metrics.address and summed up in
// the connector's progress line.
type Sink struct {
	rows    *metrics.Counter
	flushes *metrics.Histogram
}

func (s *Sink) Open(ctx context.Context) error {
	s.rows = metrics.NewCounter(ctx, "sink_rows_total", "Rows written, by collection.", "collection")
	s.flushes = metrics.NewHistogram(ctx, "sink_flush_seconds", "How long a flush took.", nil)
	return nil
}

func (s *Sink) Write(_ context.Context, records []sdk.Record) (int, error) {
	began := time.Now()
	for _, r := range records {
		s.rows.Add(1, r.Metadata[sdk.MetadataCollection])
	}
	s.flushes.Observe(time.Since(began).Seconds())
	return len(records), nil
}

func (s *Sink) Teardown(context.Context) error { return nil }

// A connector's own metrics are made from a context the SDK passes it.
// The pipeline then serves them with sdk.metrics.address, e.g.
// 127.0.0.1:9464, as connkit_sink_rows_total{collection="users",…} and
// connkit_sink_flush_seconds.
func Example() {
	_ = sdk.Connector{
		Name:        "sink",
		Version:     "v0.1.0",
		Destination: sdk.NewDestination(func(struct{}) (*Sink, error) { return &Sink{}, nil }),
	}
}
