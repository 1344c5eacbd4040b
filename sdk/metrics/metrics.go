// Package metrics adds a connector's own figures to what the SDK measures
// of it: they are served beside the SDK's at sdk.metrics.address, in the
// Prometheus text format, and summed up in the progress line the connector
// logs every sdk.metrics.logInterval.
//
// A metric is made from a context the SDK passes the connector (Open's,
// Read's, Write's, Teardown's) and named without the connkit_ prefix,
// which the SDK adds; every value carries the connector's labels
// (connector_id, plugin, plugin_version, role) besides its own:
//
//	rows := metrics.NewCounter(ctx, "mysink_rows_total", "Rows written, by table.", "table")
//	rows.Add(float64(len(batch)), table)
//
// Where nothing is measured (neither setting is on, or in a test without
// the plugin server), a metric does nothing and costs nothing; so does a
// nil one.
package metrics

import (
	"context"
	"fmt"
	"regexp"

	connmetrics "github.com/connkit/connkit/internal/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// Enabled reports whether the connector ctx belongs to measures anything:
// whether its metrics are served or logged. A connector whose figures cost
// something to find out (a query, say) finds them out only then.
func Enabled(ctx context.Context) bool { return connmetrics.FromContext(ctx) != nil }

// Counter is a count that only goes up, one per combination of its labels'
// values.
type Counter struct{ vec *prometheus.CounterVec }

// NewCounter returns the counter connkit_name of the connector ctx belongs
// to, with the label names labels; the same counter for the same name.
// Counters' names end in _total. It panics if name or a label is not a
// valid name (lower-case letters, digits and underscores, not starting
// with a digit) or name is taken by a metric of another kind or labels.
func NewCounter(ctx context.Context, name, help string, labels ...string) *Counter {
	c := &Counter{}
	register(ctx, name, labels, &c.vec, func() *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "connkit", Name: name, Help: help}, labels)
	})
	return c
}

// Add adds v, which is not negative, to the count of the label values
// labelValues, given in the order of the counter's labels.
func (c *Counter) Add(v float64, labelValues ...string) {
	if c != nil && c.vec != nil {
		c.vec.WithLabelValues(labelValues...).Add(v)
	}
}

// Gauge is a value that goes up and down, one per combination of its
// labels' values.
type Gauge struct{ vec *prometheus.GaugeVec }

// NewGauge returns the gauge connkit_name of the connector ctx belongs to,
// with the label names labels, as [NewCounter] does.
func NewGauge(ctx context.Context, name, help string, labels ...string) *Gauge {
	g := &Gauge{}
	register(ctx, name, labels, &g.vec, func() *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "connkit", Name: name, Help: help}, labels)
	})
	return g
}

// Set sets the value of the label values labelValues to v.
func (g *Gauge) Set(v float64, labelValues ...string) {
	if g != nil && g.vec != nil {
		g.vec.WithLabelValues(labelValues...).Set(v)
	}
}

// Add adds v, which may be negative, to the value of the label values
// labelValues.
func (g *Gauge) Add(v float64, labelValues ...string) {
	if g != nil && g.vec != nil {
		g.vec.WithLabelValues(labelValues...).Add(v)
	}
}

// Histogram counts observations in buckets, one per combination of its
// labels' values.
type Histogram struct{ vec *prometheus.HistogramVec }

// NewHistogram returns the histogram connkit_name of the connector ctx
// belongs to, whose buckets have the upper bounds buckets, in increasing
// order (nil: Prometheus's default, from 5ms to 10s), with the label
// names labels, as [NewCounter] does. A histogram of durations is in
// seconds and its name ends in _seconds; one of sizes in bytes ends in
// _bytes.
func NewHistogram(ctx context.Context, name, help string, buckets []float64, labels ...string) *Histogram {
	h := &Histogram{}
	register(ctx, name, labels, &h.vec, func() *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "connkit", Name: name, Help: help, Buckets: buckets}, labels)
	})
	return h
}

// Observe counts v for the label values labelValues.
func (h *Histogram) Observe(v float64, labelValues ...string) {
	if h != nil && h.vec != nil {
		h.vec.WithLabelValues(labelValues...).Observe(v)
	}
}

var validName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// register sets *vec to the collector make returns, registered with the
// metrics of ctx's connector, or to the one registered under its name
// before; it leaves *vec nil where nothing is measured.
func register[V prometheus.Collector](ctx context.Context, name string, labels []string, vec *V, make func() V) {
	for _, n := range append([]string{name}, labels...) {
		if !validName.MatchString(n) {
			panic(fmt.Sprintf("metrics: %q is not a valid name: lower-case letters, digits and underscores, not starting with a digit", n))
		}
	}
	set := connmetrics.FromContext(ctx)
	if set == nil {
		return
	}
	c, err := set.Own("connkit_"+name, labels, func() prometheus.Collector { return make() })
	if err != nil {
		panic(fmt.Sprintf("metrics: connkit_%s: %v", name, err))
	}
	v, ok := c.(V)
	if !ok {
		panic(fmt.Sprintf("metrics: connkit_%s is a metric of another kind", name))
	}
	*vec = v
}
