package metrics

import (
	"math"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// Progress returns the attributes of a progress line: what s measured so
// far, the SDK's figures and then the connector's own, each a key and a
// value. moved reports whether records came in or were acknowledged since
// the last call: a connector that did nothing logs no line. Progress is
// called from one goroutine.
func (s *Set) Progress() (attrs []any, moved bool) {
	families, err := s.registry.Gather()
	if err != nil {
		return nil, false
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	total := func(name string) float64 { // over the label values
		var sum float64
		for _, m := range byName["connkit_"+name].GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
		return sum
	}
	mean := func(name string) (count uint64, mean float64) {
		for _, m := range byName["connkit_"+name].GetMetric() {
			if h := m.GetHistogram(); h.GetSampleCount() > 0 {
				return h.GetSampleCount(), h.GetSampleSum() / float64(h.GetSampleCount())
			}
		}
		return 0, 0
	}
	in, acked := total("records_in_total"), total("records_acked_total")
	moved = in != s.lastIn || acked != s.lastAcked
	s.lastIn, s.lastAcked = in, acked
	batches, records := mean("batch_records")
	_, wait := mean("batch_wait_seconds")
	calls, call := mean(s.call + "_seconds")
	attrs = []any{"records_in", count(in), "records_acked", count(acked)}
	if s.retries != nil { // a destination's
		attrs = append(attrs, "records_nacked", count(total("records_nacked_total")))
	}
	attrs = append(attrs,
		"batches", count(float64(batches)),
		"batch_records_mean", decimal(records),
		"batch_wait_ms_mean", decimal(wait*1000),
		s.call+"s", count(float64(calls)),
		s.call+"_ms_mean", decimal(call*1000),
		"held_records", count(total("held_records")),
	)
	if s.retries != nil {
		attrs = append(attrs, "retries", count(total("retries_total")),
			"writes_in_flight", count(total("writes_in_flight")), "write_concurrency_limit", count(total("write_concurrency_limit")))
	}
	for _, f := range families {
		if s.sdk[f.GetName()] {
			continue
		}
		name := strings.TrimPrefix(f.GetName(), "connkit_")
		for _, m := range f.GetMetric() {
			key := name + ownLabels(m)
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				attrs = append(attrs, key, decimal(m.GetCounter().GetValue()))
			case dto.MetricType_GAUGE:
				attrs = append(attrs, key, decimal(m.GetGauge().GetValue()))
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				attrs = append(attrs, key+"_count", count(float64(h.GetSampleCount())))
				if h.GetSampleCount() > 0 {
					attrs = append(attrs, key+"_mean", decimal(h.GetSampleSum()/float64(h.GetSampleCount())))
				}
			}
		}
	}
	return attrs, moved
}

// instanceLabels are the labels every metric of an instance has.
var instanceLabels = map[string]bool{"connector_id": true, "plugin": true, "plugin_version": true, "role": true}

// ownLabels writes a metric's labels other than the instance's as
// {name=value,…}, or "" if it has none.
func ownLabels(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		if !instanceLabels[l.GetName()] {
			parts = append(parts, l.GetName()+"="+l.GetValue())
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// count writes a whole number.
func count(n float64) string { return strconv.FormatInt(int64(n), 10) }

// decimal writes a number to at most three decimals.
func decimal(f float64) string { return strconv.FormatFloat(math.Round(f*1000)/1000, 'f', -1, 64) }
