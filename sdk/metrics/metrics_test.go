package metrics_test

import (
	"context"
	"strings"
	"testing"

	connmetrics "github.com/connkit/connkit/internal/metrics"
	"github.com/connkit/connkit/internal/metrics/metricstest"
	"github.com/connkit/connkit/sdk/metrics"
	"github.com/matryer/is"
)

// measured returns a context whose connector's metrics are served, and
// where.
func measured(t *testing.T) (context.Context, string) {
	t.Helper()
	return metricstest.Serve(t, context.Background(), connmetrics.Labels{ConnectorID: "p:sink", Plugin: "sink", Version: "v1.0.0", Role: "destination"})
}

// TestOwnMetrics: a connector's counter, gauge and histogram are served
// with its labels and theirs; asking for one again gives the same one.
func TestOwnMetrics(t *testing.T) {
	is := is.New(t)
	ctx, address := measured(t)
	is.True(metrics.Enabled(ctx))

	metrics.NewCounter(ctx, "sink_rows_total", "Rows, by table.", "table").Add(3, "users")
	metrics.NewCounter(ctx, "sink_rows_total", "Rows, by table.", "table").Add(2, "users") // the same
	metrics.NewGauge(ctx, "sink_pending", "Pending rows.").Set(7)
	metrics.NewGauge(ctx, "sink_pending", "Pending rows.").Add(-2)
	h := metrics.NewHistogram(ctx, "sink_flush_seconds", "Flushes.", []float64{0.1, 1}, "table")
	h.Observe(0.5, "users")
	h.Observe(2, "users")

	l := []string{"connector_id=p:sink", "plugin=sink", "plugin_version=v1.0.0", "role=destination"}
	metricstest.Expect(t, address, []metricstest.Want{
		{Name: "connkit_sink_rows_total", Labels: append(l, "table=users"), Value: 5},
		{Name: "connkit_sink_pending", Labels: l, Value: 5},
		{Name: "connkit_sink_flush_seconds_bucket", Labels: append(l, "table=users", "le=1"), Value: 1},
		{Name: "connkit_sink_flush_seconds_count", Labels: append(l, "table=users"), Value: 2},
	})
}

// TestUnmeasured: without the plugin server's metrics, metrics do nothing.
func TestUnmeasured(t *testing.T) {
	ctx := context.Background()
	if metrics.Enabled(ctx) {
		t.Fatal("enabled without a plugin server")
	}
	metrics.NewCounter(ctx, "rows_total", "Rows.", "table").Add(1, "t")
	metrics.NewGauge(ctx, "pending", "Pending.").Set(1)
	metrics.NewHistogram(ctx, "flush_seconds", "Flushes.", nil).Observe(1)
	var unmade *metrics.Counter // a field not yet set, say
	unmade.Add(1)
}

// TestMisuse: what a connector's code gets wrong panics at once, naming
// the metric, measured or not.
func TestMisuse(t *testing.T) {
	measuredCtx, _ := measured(t)
	for _, c := range []struct {
		name string
		ctx  context.Context
		make func(ctx context.Context)
		want string
	}{
		{"bad name", context.Background(), func(ctx context.Context) { metrics.NewCounter(ctx, "rows-total", "") }, `"rows-total" is not a valid name`},
		{"bad label", measuredCtx, func(ctx context.Context) { metrics.NewGauge(ctx, "lag", "", "Table") }, `"Table" is not a valid name`},
		{"the SDK's", measuredCtx, func(ctx context.Context) { metrics.NewCounter(ctx, "records_in_total", "") }, "connkit_records_in_total: the name of one of the SDK's metrics"},
		{"other labels", measuredCtx, func(ctx context.Context) {
			metrics.NewCounter(ctx, "dup_total", "", "a")
			metrics.NewCounter(ctx, "dup_total", "", "b")
		}, `connkit_dup_total: registered before with the labels ["a"], not ["b"]`},
		{"other kind", measuredCtx, func(ctx context.Context) {
			metrics.NewCounter(ctx, "kind_total", "")
			metrics.NewGauge(ctx, "kind_total", "")
		}, "connkit_kind_total is a metric of another kind"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if got, _ := recover().(string); !strings.Contains(got, c.want) {
					t.Fatalf("panicked with %q, want it to say %q", got, c.want)
				}
			}()
			c.make(c.ctx)
		})
	}
}
