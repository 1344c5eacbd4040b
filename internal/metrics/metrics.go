// Package metrics is what a connector instance measures: the SDK's figures,
// which the plugin server keeps for every connector, and the connector's
// own, in one Prometheus registry per instance, served in the Prometheus
// text format and summed up in a progress line.
//
// Every metric carries the instance's labels: connector_id (Conduit's ID
// for the connector), plugin, plugin_version and role (source or
// destination). A nil *Set measures nothing and costs nothing.
package metrics

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Labels name a connector instance on every metric it serves.
type Labels struct {
	ConnectorID string
	Plugin      string
	Version     string
	Role        string // "source" or "destination"
}

// Why a batch went to the connector (a destination's Write) or to Conduit
// (a source's message).
const (
	ReasonSize        = "size"         // it reached sdk.batch.size
	ReasonBytes       = "bytes"        // it reached sdk.batch.bytes
	ReasonHold        = "hold"         // what the plugin holds reached its bound: nothing more could come
	ReasonDelay       = "delay"        // its oldest record waited sdk.batch.delay
	ReasonStop        = "stop"         // Stop, or the end of the stream, sent what was held
	ReasonGroupCommit = "group_commit" // the connector (or Conduit) was free, and the batch is what had arrived
)

// Why records were nacked.
const (
	NackRecordFault      = "record_fault"      // Write marked the record's own fault
	NackRetriesExhausted = "retries_exhausted" // a retryable failure outlasted the retries, or a Stop or Teardown ended them
	NackFailed           = "failed"            // Write failed at the record, unmarked
	NackNotAttempted     = "not_attempted"     // a record before it failed, or the destination was tearing down
	NackContractBroken   = "contract_broken"   // Write broke its contract or panicked
)

// Set is one connector instance's metrics. The plugin server updates the
// SDK's through its methods, which do nothing on a nil *Set; connector code
// adds its own to Registerer.
type Set struct {
	registry   *prometheus.Registry
	registerer prometheus.Registerer // with the instance's labels
	labels     Labels
	call       string          // what the connector's call is measured as: "write" or "read"
	sdk        map[string]bool // the names of the SDK's metrics

	lastIn, lastAcked float64 // at the last progress line

	mu  sync.Mutex
	own map[string]ownMetric // the connector's, by name

	in, acked   prometheus.Counter
	nacked      *prometheus.CounterVec
	flushes     *prometheus.CounterVec
	batch       prometheus.Histogram // records
	batchBytes  prometheus.Histogram
	wait        prometheus.Histogram
	calls       prometheus.Histogram // Write or Read
	retries     prometheus.Counter
	heldRecords prometheus.Gauge
	heldBytes   prometheus.Gauge
	inFlight    prometheus.Gauge // a destination's Writes in flight
	limit       prometheus.Gauge // how many it may have
}

// New returns the metrics of the instance l names.
func New(l Labels) *Set {
	reg := prometheus.NewRegistry()
	s := &Set{
		registry: reg,
		registerer: prometheus.WrapRegistererWith(prometheus.Labels{
			"connector_id": l.ConnectorID, "plugin": l.Plugin, "plugin_version": l.Version, "role": l.Role,
		}, reg),
		labels: l,
		call:   "write",
		sdk:    map[string]bool{},
	}
	verb := "Write"
	if l.Role == "source" {
		s.call, verb = "read", "Read or ReadBatch"
	}
	s.in = s.counter("records_in_total", "Records the connector took in: received from Conduit (destination) or read (source).")
	s.acked = s.counter("records_acked_total", "Records acknowledged: to Conduit, written (destination), or by Conduit (source).")
	s.nacked = s.counterVec("records_nacked_total", "Records a destination negatively acknowledged, by kind: record_fault, retries_exhausted, failed, not_attempted, contract_broken.", "kind")
	s.flushes = s.counterVec("flushes_total", "Batches handed to the connector's Write (destination) or sent to Conduit (source), by why: size, bytes, hold, delay, stop, group_commit.", "reason")
	s.batch = s.histogram("batch_records", "Records per batch.", prometheus.ExponentialBuckets(1, 4, 9))
	s.batchBytes = s.histogram("batch_bytes", "Bytes per batch, as the batching limits measure them.", prometheus.ExponentialBuckets(256, 4, 9))
	s.wait = s.histogram("batch_wait_seconds", "How long a batch's oldest record waited, from its arrival to the batch's Write (destination) or send (source).", prometheus.ExponentialBuckets(0.0001, 4, 10))
	s.calls = s.histogram(s.call+"_seconds", "How long the connector's "+verb+" calls took.", prometheus.ExponentialBuckets(0.0001, 4, 10))
	if l.Role == "destination" {
		s.retries = s.counter("retries_total", "Writes retried after a failure the connector marked retryable.")
		s.inFlight = s.gauge("writes_in_flight", "Writes in flight together.")
		s.limit = s.gauge("write_concurrency_limit", "How many Writes may be in flight together: sdk.write.concurrency, or where auto has found it.")
	}
	s.heldRecords = s.gauge("held_records", "Records held in flight: taken in and not yet acknowledged (destination) or sent (source).")
	s.heldBytes = s.gauge("held_bytes", "Bytes of the records held in flight.")
	return s
}

// Labels returns the labels of the instance s measures.
func (s *Set) Labels() Labels { return s.labels }

// Registerer is where connector code registers its own metrics; nil for a
// nil s.
func (s *Set) Registerer() prometheus.Registerer {
	if s == nil {
		return nil
	}
	return s.registerer
}

type ownMetric struct {
	c      prometheus.Collector
	labels []string
}

// Own returns the connector's own metric name with the label names
// labels, made by make and registered the first time. A name the SDK's
// metrics have, or that was registered with other labels, is an error.
func (s *Set) Own(name string, labels []string, make func() prometheus.Collector) (prometheus.Collector, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.own[name]; ok {
		if !slices.Equal(m.labels, labels) {
			return nil, fmt.Errorf("registered before with the labels %q, not %q", m.labels, labels)
		}
		return m.c, nil
	}
	if s.sdk[name] {
		return nil, errors.New("the name of one of the SDK's metrics")
	}
	c := make()
	if err := s.registerer.Register(c); err != nil {
		return nil, err
	}
	if s.own == nil {
		s.own = map[string]ownMetric{}
	}
	s.own[name] = ownMetric{c, slices.Clone(labels)}
	return c, nil
}

// In notes n records taken in.
func (s *Set) In(n int) {
	if s != nil {
		s.in.Add(float64(n))
	}
}

// Acked notes n records acknowledged.
func (s *Set) Acked(n int) {
	if s != nil && n > 0 {
		s.acked.Add(float64(n))
	}
}

// Nacked notes n records nacked for the reason kind.
func (s *Set) Nacked(kind string, n int) {
	if s != nil && n > 0 {
		s.nacked.WithLabelValues(kind).Add(float64(n))
	}
}

// Batched notes a batch of records and bytes that went for reason, its
// oldest record having waited wait.
func (s *Set) Batched(reason string, records, bytes int, wait time.Duration) {
	if s == nil {
		return
	}
	s.flushes.WithLabelValues(reason).Inc()
	s.batch.Observe(float64(records))
	s.batchBytes.Observe(float64(bytes))
	s.wait.Observe(wait.Seconds())
}

// Called notes a Write or Read call that took d.
func (s *Set) Called(d time.Duration) {
	if s != nil {
		s.calls.Observe(d.Seconds())
	}
}

// Retried notes a retry.
func (s *Set) Retried() {
	if s != nil && s.retries != nil {
		s.retries.Inc()
	}
}

// Flight notes how many Writes are in flight and how many may be.
func (s *Set) Flight(inFlight, limit int) {
	if s != nil && s.inFlight != nil {
		s.inFlight.Set(float64(inFlight))
		s.limit.Set(float64(limit))
	}
}

// Held notes what is held in flight.
func (s *Set) Held(records, bytes int) {
	if s != nil {
		s.heldRecords.Set(float64(records))
		s.heldBytes.Set(float64(bytes))
	}
}

func (s *Set) counter(name, help string) prometheus.Counter {
	s.sdk["connkit_"+name] = true
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "connkit", Name: name, Help: help})
	s.registerer.MustRegister(c)
	return c
}

func (s *Set) counterVec(name, help, label string) *prometheus.CounterVec {
	s.sdk["connkit_"+name] = true
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "connkit", Name: name, Help: help}, []string{label})
	s.registerer.MustRegister(c)
	return c
}

func (s *Set) histogram(name, help string, buckets []float64) prometheus.Histogram {
	s.sdk["connkit_"+name] = true
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "connkit", Name: name, Help: help, Buckets: buckets})
	s.registerer.MustRegister(h)
	return h
}

func (s *Set) gauge(name, help string) prometheus.Gauge {
	s.sdk["connkit_"+name] = true
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "connkit", Name: name, Help: help})
	s.registerer.MustRegister(g)
	return g
}
