package metrics_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/metrics"
	"github.com/connkit/connkit/internal/metrics/metricstest"
	"github.com/matryer/is"
	"github.com/prometheus/client_golang/prometheus"
)

var labels = metrics.Labels{ConnectorID: "pipeline:dest", Plugin: "postgres", Version: "v0.1.0", Role: "destination"}

// TestServe: what the SDK counts is served in the Prometheus text format,
// each series with the instance's labels, beside a connector's own.
func TestServe(t *testing.T) {
	is := is.New(t)
	s := metrics.New(labels)
	address, stop, err := s.Serve("127.0.0.1:0")
	is.NoErr(err)
	defer stop()
	s.In(10)
	s.Acked(7)
	s.Nacked(metrics.NackRecordFault, 1)
	s.Nacked(metrics.NackNotAttempted, 2)
	s.Batched(metrics.ReasonGroupCommit, 10, 2048, 3*time.Millisecond)
	s.Called(4 * time.Millisecond)
	s.Retried()
	s.Held(3, 300)
	rows := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "connkit", Name: "postgres_rows_total", Help: "Rows."}, []string{"operation"})
	is.NoErr(s.Registerer().Register(rows))
	rows.WithLabelValues("insert").Add(5)

	l := []string{"connector_id=pipeline:dest", "plugin=postgres", "plugin_version=v0.1.0", "role=destination"}
	metricstest.Expect(t, address, []metricstest.Want{
		{Name: "connkit_records_in_total", Labels: l, Value: 10},
		{Name: "connkit_records_acked_total", Labels: l, Value: 7},
		{Name: "connkit_records_nacked_total", Labels: append(l, "kind=record_fault"), Value: 1},
		{Name: "connkit_records_nacked_total", Labels: append(l, "kind=not_attempted"), Value: 2},
		{Name: "connkit_flushes_total", Labels: append(l, "reason=group_commit"), Value: 1},
		{Name: "connkit_batch_records_sum", Labels: l, Value: 10},
		{Name: "connkit_batch_bytes_sum", Labels: l, Value: 2048},
		{Name: "connkit_batch_wait_seconds_count", Labels: l, Value: 1},
		{Name: "connkit_write_seconds_sum", Labels: l, Value: 0.004},
		{Name: "connkit_retries_total", Labels: l, Value: 1},
		{Name: "connkit_held_records", Labels: l, Value: 3},
		{Name: "connkit_held_bytes", Labels: l, Value: 300},
		{Name: "connkit_postgres_rows_total", Labels: append(l, "operation=insert"), Value: 5},
	})
}

// TestServeAddressInUse: an address another listener holds is an error
// that names the address and the connector.
func TestServeAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, _, err = metrics.New(labels).Serve(ln.Addr().String())
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), `connector "pipeline:dest"`) {
		t.Fatalf("got %v, want an error naming the address and the connector", err)
	}
}

func TestCheckAddress(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:9464", ":9464", "localhost:0", "[::1]:9464"} {
		if err := metrics.CheckAddress(ok); err != nil {
			t.Errorf("metrics.CheckAddress(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"9464", "localhost", "127.0.0.1:port", "127.0.0.1:70000", "a host:1", "http://127.0.0.1:9464"} {
		if err := metrics.CheckAddress(bad); err == nil {
			t.Errorf("metrics.CheckAddress(%q) accepts it", bad)
		}
	}
}

// TestProgress: the progress line says what the metrics say, the
// connector's own after the SDK's, and only once records moved.
func TestProgress(t *testing.T) {
	is := is.New(t)
	s := metrics.New(metrics.Labels{ConnectorID: "src", Plugin: "postgres", Version: "v0.1.0", Role: "source"})
	_, moved := s.Progress()
	is.True(!moved) // nothing yet
	s.In(1500)
	s.Acked(1000)
	s.Batched(metrics.ReasonSize, 1000, 0, 2*time.Millisecond)
	s.Batched(metrics.ReasonStop, 500, 0, 4*time.Millisecond)
	s.Called(time.Millisecond)
	table := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "connkit", Name: "postgres_snapshot_rows", Help: "Rows."}, []string{"table"})
	is.NoErr(s.Registerer().Register(table))
	table.WithLabelValues("users").Set(1500)
	attrs, moved := s.Progress()
	is.True(moved)
	is.Equal(attrs, []any{
		"records_in", "1500", "records_acked", "1000",
		"batches", "2", "batch_records_mean", "750", "batch_wait_ms_mean", "3",
		"reads", "1", "read_ms_mean", "1", "held_records", "0",
		"postgres_snapshot_rows{table=users}", "1500",
	})
	_, moved = s.Progress()
	is.True(!moved) // idle since
}

// A nil Set counts nothing and costs nothing.
func TestNilSet(t *testing.T) {
	var s *metrics.Set
	s.In(1)
	s.Acked(1)
	s.Nacked(metrics.NackFailed, 1)
	s.Batched(metrics.ReasonSize, 1, 1, time.Second)
	s.Called(time.Second)
	s.Retried()
	s.Held(1, 1)
	if s.Registerer() != nil {
		t.Fatal("a nil Set has a registerer")
	}
}
