package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestHistogramQuantile(t *testing.T) {
	inf := math.Inf(1)
	bounds := []float64{.001, .01, .1, inf}
	for _, tt := range []struct {
		name       string
		cumulative []float64
		q, want    float64
		above      bool
	}{
		{name: "inside the first bucket, from 0", cumulative: []float64{100, 100, 100, 100}, q: 0.5, want: .0005},
		{name: "interpolated inside a bucket", cumulative: []float64{0, 50, 150, 150}, q: 0.99, want: .01 + .09*(148.5-50)/100},
		{name: "on a bucket's upper bound", cumulative: []float64{0, 99, 100, 100}, q: 0.99, want: .01},
		{name: "empty buckets skipped", cumulative: []float64{10, 10, 10, 1000}, q: 0.99, want: .1, above: true},
		{name: "beyond the last bound", cumulative: []float64{0, 0, 0, 10}, q: 0.5, want: .1, above: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			h := histogram{count: tt.cumulative[len(tt.cumulative)-1], bounds: bounds, cumulative: tt.cumulative}
			got, above := h.quantile(tt.q)
			is.True(math.Abs(got-tt.want) < 1e-12) // the quantile
			is.Equal(above, tt.above)
		})
	}
}

func TestHistogramMinus(t *testing.T) {
	is := is.New(t)
	bounds := []float64{.01, math.Inf(1)}
	before := histogram{count: 10, sum: 1, bounds: bounds, cumulative: []float64{8, 10}}
	after := histogram{count: 30, sum: 4, bounds: bounds, cumulative: []float64{18, 30}}
	d := after.minus(before)
	is.Equal(d.count, 20.0)
	is.Equal(d.mean(), 3.0/20)
	is.Equal(d.cumulative, []float64{10, 20})
	is.Equal(after.minus(histogram{}), after) // since before anything was counted
}

func TestThousands(t *testing.T) {
	is := is.New(t)
	for in, want := range map[float64]string{0: "0", 999.4: "999", 1000: "1,000", 12345.6: "12,346", 1234567: "1,234,567", -1234: "-1,234"} {
		is.Equal(thousands(in), want)
	}
	is.Equal(millis(0.00123), "1.2 ms")
	is.Equal(millis(10.5), "10,500 ms")
}

func TestLoadSettings(t *testing.T) {
	batch := map[string]string{"sdk.batch.size": "100", "sdk.batch.delay": "1s"}
	none := map[string]string{}
	for _, tt := range []struct {
		engine, v2Batching  string
		source, destination map[string]string
	}{
		{"default", "both", none, batch},
		{"default", "source", none, batch},
		{"v2", "destination", none, batch},
		{"v2", "source", batch, none},
		{"v2", "both", batch, batch},
	} {
		t.Run(tt.engine+"/"+tt.v2Batching, func(t *testing.T) {
			is := is.New(t)
			source, destination := loadSettings(tt.engine, tt.v2Batching, load{batch: 100}, time.Second)
			is.Equal(source, tt.source)
			is.Equal(destination, tt.destination)
		})
	}
	is := is.New(t)
	source, destination := loadSettings("v2", "both", load{sourceRate: 2.5}, time.Second)
	is.Equal(source, map[string]string{"rate": "2.5"}) // an idle load: its rate, no batch settings
	is.Equal(destination, none)
	source, destination = loadSettings("default", "both", load{batch: 10, sourceRate: 500}, time.Second)
	is.Equal(source, map[string]string{"rate": "500"}) // a fixed-rate load: the rate and the batch settings
	is.Equal(destination, map[string]string{"sdk.batch.size": "10", "sdk.batch.delay": "1s"})
}

// A batch size given twice is two rows, each its own measurement, as
// alternating repeated pairs measure a noisy machine: the report and the
// CSV file show each row's cells, not the first row's twice.
func TestRepeatedBatchSizes(t *testing.T) {
	is := is.New(t)
	loads := conduitLoads([]int{0, 100, 0}, 0, 10)
	is.Equal(len(loads), 4)
	is.Equal(loads[0].batch, loads[2].batch)
	is.True(loads[0] != loads[2]) // rows of their own
	is.True(loads[3].idle)        // the idle row last
	is.Equal(loads[2].label(), "not set")

	var cells []*conduitCell
	for i, l := range loads {
		records := float64(1000 * (i + 1)) // 100, 200, 300, 400 rows/s over 10 s
		cells = append(cells, &conduitCell{engine: "default", load: l, plugin: plugin{name: "connkit"},
			window: window{records: records, elapsed: 10, hist: histogram{count: records, sum: records * 0.01}}})
	}
	report := conduitReport("Conduit v0.14.0", cells, []string{"connkit"}, []string{"default"}, loads, time.Second, "both", time.Second, 10*time.Second, 0)
	var rows []string
	for line := range strings.SplitSeq(report, "\n") {
		if strings.HasPrefix(line, "| default | not set | ") {
			rows = append(rows, line)
		}
	}
	// Each row once in the main table and once in the resources table.
	is.Equal(len(rows), 4)
	is.True(strings.HasPrefix(rows[0], "| default | not set | 100 | "))
	is.True(strings.HasPrefix(rows[1], "| default | not set | 300 | "))
	is.True(strings.HasPrefix(rows[2], "| default | not set | connkit | 100 | "))
	is.True(strings.HasPrefix(rows[3], "| default | not set | connkit | 300 | "))
	csv := conduitCSV(cells)
	is.True(strings.Contains(csv, "\ndefault,not set,connkit,100,"))
	is.True(strings.Contains(csv, "\ndefault,not set,connkit,300,"))
}
