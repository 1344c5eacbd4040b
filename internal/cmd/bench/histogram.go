package main

import (
	"bufio"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// histogram is a reading of a Prometheus histogram: its count, its sum and
// its cumulative buckets, by upper bound, ascending, +Inf last.
type histogram struct {
	count, sum float64
	bounds     []float64
	cumulative []float64
}

// readHistogram reads Conduit's conduit_pipeline_execution_duration_seconds
// for a pipeline from its /metrics, and when it read it.
func readHistogram(baseURL, pipeline string) (histogram, time.Time, error) {
	at := time.Now()
	resp, err := http.Get(baseURL + "/metrics")
	if err != nil {
		return histogram{}, at, err
	}
	defer resp.Body.Close()
	const name = "conduit_pipeline_execution_duration_seconds"
	label := `pipeline_name="` + pipeline + `"`
	var h histogram
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || !strings.Contains(line, label) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return histogram{}, at, fmt.Errorf("metrics: %q: %w", line, err)
		}
		switch {
		case strings.HasPrefix(rest, "_count"):
			h.count = v
		case strings.HasPrefix(rest, "_sum"):
			h.sum = v
		case strings.HasPrefix(rest, "_bucket"):
			_, le, _ := strings.Cut(rest, `le="`)
			le, _, _ = strings.Cut(le, `"`)
			bound, err := strconv.ParseFloat(le, 64) // ParseFloat reads "+Inf"
			if err != nil {
				return histogram{}, at, fmt.Errorf("metrics: bucket bound in %q: %w", line, err)
			}
			h.bounds = append(h.bounds, bound)
			h.cumulative = append(h.cumulative, v)
		}
	}
	if err := sc.Err(); err != nil {
		return histogram{}, at, err
	}
	if len(h.bounds) == 0 {
		return histogram{}, at, fmt.Errorf("metrics: no %s for pipeline %s", name, pipeline)
	}
	return h, at, nil
}

// minus returns what h counted since the earlier reading e; a zero e is a
// reading before anything was counted.
func (h histogram) minus(e histogram) histogram {
	d := histogram{count: h.count - e.count, sum: h.sum - e.sum, bounds: h.bounds}
	for i, c := range h.cumulative {
		if e.cumulative != nil {
			c -= e.cumulative[i]
		}
		d.cumulative = append(d.cumulative, c)
	}
	return d
}

// mean returns the mean latency in seconds.
func (h histogram) mean() float64 { return h.sum / h.count }

// quantile estimates the q-quantile in seconds as Prometheus's
// histogram_quantile does: it finds the bucket holding the rank q×count and
// interpolates linearly between the bucket's bounds (the first bucket's
// lower bound is 0), which assumes the records of a bucket spread evenly
// across it. A rank in the +Inf bucket has no upper bound: quantile
// returns the largest finite bound and above = true.
func (h histogram) quantile(q float64) (v float64, above bool) {
	rank := q * h.count
	lower, below := 0.0, 0.0
	for i, bound := range h.bounds {
		if h.cumulative[i] >= rank && h.cumulative[i] > below {
			if math.IsInf(bound, 1) {
				return lower, true
			}
			return lower + (bound-lower)*(rank-below)/(h.cumulative[i]-below), false
		}
		lower, below = bound, h.cumulative[i]
	}
	return lower, true
}

// millis formats seconds as milliseconds, with thousands separators from
// 1,000 ms and a decimal below 10 ms.
func millis(s float64) string {
	ms := s * 1000
	if ms < 10 {
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	}
	return thousands(ms) + " ms"
}

// thousands formats v rounded, with thousands separators: 12,345.
func thousands(v float64) string {
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
