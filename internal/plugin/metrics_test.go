package plugin

import (
	"errors"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
	"github.com/connkit/connkit/internal/metrics"
	"github.com/connkit/connkit/internal/metrics/metricstest"
	"github.com/matryer/is"
)

// What the servers measure of a run, in virtual time; the metrics are
// read once the run is over, through the endpoint Prometheus scrapes.

// measuredDestination returns a server of the destination made of dst,
// not yet configured, and the metrics it keeps.
func measuredDestination(dst testDestination, batch batcher.Policy, retry Retry) (*metrics.Set, *destinationServer) {
	set := metrics.New(metrics.Labels{ConnectorID: "p:dst", Plugin: "test", Version: "v0.1.0", Role: "destination"})
	return set, testDestinationServer(func(map[string]string) (Destination, error) {
		d := destinationOf(dst, batch, retry)
		d.Metrics.Set = set
		return d, nil
	})
}

// scraped returns what set serves.
func scraped(t *testing.T, set *metrics.Set) metricstest.Samples {
	t.Helper()
	address, stop, err := set.Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	got, err := metricstest.Scrape(address)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

type want struct {
	name   string
	labels []string
	value  float64
}

func checkSamples(t *testing.T, got metricstest.Samples, wants []want) {
	t.Helper()
	for _, w := range wants {
		v, ok := got.Get(w.name, w.labels...)
		if w.value == 0 && !ok {
			continue // a vector's value never set
		}
		if !ok || v != w.value {
			t.Errorf("%s = %v (served: %t), want %v", metricstest.Key(w.name, w.labels...), v, ok, w.value)
		}
	}
}

var (
	destinationLabels = []string{"connector_id=p:dst", "plugin=test", "plugin_version=v0.1.0", "role=destination"}
	sourceLabels      = []string{"connector_id=p:src", "plugin=test", "plugin_version=v0.1.0", "role=source"}
)

func with(labels []string, more ...string) []string {
	return append(append([]string(nil), labels...), more...)
}

// TestDestinationMetrics: one Write at a time, each taking a second, of
// records sent one per message: why each batch went, how long its oldest
// record waited, and what became of each record.
func TestDestinationMetrics(t *testing.T) {
	var set *metrics.Set
	inBubble(t, func(t *testing.T, _ *is.I) {
		w := &writeLog{delay: time.Second, outcome: func(b []opencdc.Record) (int, error) {
			if string(b[0].Position) == "4" {
				return 0, faultErr{errors.New("bad record")}
			}
			return len(b), nil
		}}
		var d *destinationServer
		set, d = measuredDestination(w, batcher.Policy{Count: 2}, Retry{})
		r := logWrites(t, d, w)
		r.run()
		for i := 1; i <= 5; i++ {
			r.send(i, i)
			synctest.Wait()
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		// [1]@0s alone (the writer was free), [2 3]@1s and [4 5]@2s full;
		// 4 is nacked, and 5 written again on its own.
		want := []string{"[1]@0s", "[2 3]@1s", "[4 5]@2s", "[5]@3s"}
		if got := w.got(); !slices.Equal(got, want) {
			t.Fatalf("writes %v, want %v", got, want)
		}
		r.finish("5")
	})
	l := destinationLabels
	checkSamples(t, scraped(t, set), []want{
		{"connkit_records_in_total", l, 5},
		{"connkit_records_acked_total", l, 4},
		{"connkit_records_nacked_total", with(l, "kind=record_fault"), 1},
		{"connkit_flushes_total", with(l, "reason=group_commit"), 1},
		{"connkit_flushes_total", with(l, "reason=size"), 2},
		{"connkit_batch_records_sum", l, 5},
		{"connkit_batch_records_count", l, 3},
		{"connkit_batch_wait_seconds_sum", l, 3}, // 0 + 1 + 2
		{"connkit_write_seconds_count", l, 4},
		{"connkit_write_seconds_sum", l, 4},
		{"connkit_retries_total", l, 0},
		{"connkit_held_records", l, 0},
	})
}

// TestNackMetrics: each way a Write can fail counts its records under its
// kind, and each retry.
func TestNackMetrics(t *testing.T) {
	retryOnce := Retry{Attempts: 1, Delay: time.Second, MaxDelay: time.Second}
	tests := []struct {
		name    string
		outcome func(call int, b []opencdc.Record) (int, error)
		acked   float64
		nacked  map[string]float64
		retries float64
	}{
		{"unmarked failure", func(_ int, b []opencdc.Record) (int, error) { return 1, errors.New("disk full") }, 1,
			map[string]float64{metrics.NackFailed: 1, metrics.NackNotAttempted: 1}, 0},
		{"retries run out", func(call int, b []opencdc.Record) (int, error) {
			if call == 0 {
				return 1, retryableErr{errors.New("connection reset")}
			}
			return 0, retryableErr{errors.New("connection reset")}
		}, 1, map[string]float64{metrics.NackRetriesExhausted: 2}, 1},
		{"a retry succeeds", func(call int, b []opencdc.Record) (int, error) {
			if call == 0 {
				return 0, retryableErr{errors.New("connection reset")}
			}
			return len(b), nil
		}, 3, nil, 1},
		{"contract broken", func(_ int, b []opencdc.Record) (int, error) { return len(b) + 1, nil }, 0,
			map[string]float64{metrics.NackContractBroken: 3}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var set *metrics.Set
			inBubble(t, func(t *testing.T, _ *is.I) {
				calls := 0
				w := &writeLog{outcome: func(b []opencdc.Record) (int, error) {
					defer func() { calls++ }()
					return tt.outcome(calls, b)
				}}
				var d *destinationServer
				set, d = measuredDestination(w, batcher.Policy{Count: 3}, retryOnce)
				r := logWrites(t, d, w)
				r.run()
				r.send(1, 3)
				time.Sleep(10 * time.Second)
				synctest.Wait()
				r.finish("3")
			})
			l := destinationLabels
			wants := []want{
				{"connkit_records_in_total", l, 3},
				{"connkit_records_acked_total", l, tt.acked},
				{"connkit_retries_total", l, tt.retries},
			}
			for _, kind := range []string{metrics.NackRecordFault, metrics.NackRetriesExhausted, metrics.NackFailed, metrics.NackNotAttempted, metrics.NackContractBroken} {
				wants = append(wants, want{"connkit_records_nacked_total", with(l, "kind="+kind), tt.nacked[kind]})
			}
			checkSamples(t, scraped(t, set), wants)
		})
	}
}

// TestSourceMetrics: a source's records read, sent and acked by Conduit.
func TestSourceMetrics(t *testing.T) {
	set := metrics.New(metrics.Labels{ConnectorID: "p:src", Plugin: "test", Version: "v0.1.0", Role: "source"})
	inBubble(t, func(t *testing.T, _ *is.I) {
		fake := &fakeSource{limit: 4}
		s := testSourceServer(func(map[string]string) (Source, error) {
			src := sourceOf(fake, batcher.Policy{Count: 10, Delay: time.Second})
			src.Metrics.Set = set
			return src, nil
		})
		open(t, &s.instance)
		r := newSourceRun(t, s).run()
		r.receive(4, func([]string) {})
		r.ack("1", "2", "3")
		synctest.Wait()
		if _, err := r.stop(); err != nil {
			t.Fatal(err)
		}
		r.end()
	})
	l := sourceLabels
	checkSamples(t, scraped(t, set), []want{
		{"connkit_records_in_total", l, 4},
		{"connkit_records_acked_total", l, 3},
		{"connkit_flushes_total", with(l, "reason=delay"), 1},
		{"connkit_batch_records_sum", l, 4},
		{"connkit_batch_wait_seconds_sum", l, 1},
		{"connkit_read_seconds_count", l, 5}, // the fifth waits until Stop
		{"connkit_held_records", l, 0},
	})
}

// logBuffer is a log the tests read, written from the server's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// loggedDestinationServer returns a server of dst with metrics m, logging
// to the returned buffer.
func loggedDestinationServer(dst testDestination, m Metrics) (*destinationServer, *logBuffer) {
	var log logBuffer
	d := newDestinationServer(testFactory{destination: func(map[string]string) (Destination, error) {
		d := destinationOf(dst, batcher.Policy{}, Retry{})
		d.Metrics = m
		return d, nil
	}}, slog.New(slog.NewTextHandler(&log, nil)))
	return d, &log
}

// TestMetricsServedFromOpenToTeardown: the endpoint is up once Open has
// returned, says where in the log, and is gone after Teardown.
func TestMetricsServedFromOpenToTeardown(t *testing.T) {
	is := is.New(t)
	set := metrics.New(metrics.Labels{ConnectorID: "p:dst", Plugin: "test", Version: "v0.1.0", Role: "destination"})
	d, log := loggedDestinationServer(&writeLog{}, Metrics{Set: set, Address: "127.0.0.1:0"})
	open(t, &d.instance)
	m := regexp.MustCompile(`serving metrics at http://([^/]+)/metrics" connector_id=p:dst`).FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("the log does not say where the metrics are served:\n%s", log)
	}
	got, err := metricstest.Scrape(m[1])
	is.NoErr(err)
	_, ok := got.Get("connkit_records_in_total", destinationLabels...)
	is.True(ok)
	_, err = d.Teardown(t.Context(), pconnector.DestinationTeardownRequest{})
	is.NoErr(err)
	_, err = metricstest.Scrape(m[1])
	is.True(err != nil) // nothing listens
}

// TestMetricsAddressInUse: an address another listener holds fails Open
// with an error that names it and the connector.
func TestMetricsAddressInUse(t *testing.T) {
	is := is.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	is.NoErr(err)
	defer ln.Close()
	set := metrics.New(metrics.Labels{ConnectorID: "p:dst", Plugin: "test", Version: "v0.1.0", Role: "destination"})
	d, _ := loggedDestinationServer(&writeLog{}, Metrics{Set: set, Address: ln.Addr().String()})
	_, err = d.Configure(t.Context(), pconnector.DestinationConfigureRequest{})
	is.NoErr(err)
	_, err = d.Open(t.Context(), pconnector.DestinationOpenRequest{})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), ln.Addr().String()))
	is.True(strings.Contains(err.Error(), `connector "p:dst"`))
	_, err = d.Teardown(t.Context(), pconnector.DestinationTeardownRequest{})
	is.NoErr(err)
}

// TestProgressLine: while records move, a line per interval says what the
// metrics say; an idle connector logs none.
func TestProgressLine(t *testing.T) {
	inBubble(t, func(t *testing.T, _ *is.I) {
		set := metrics.New(metrics.Labels{ConnectorID: "p:dst", Plugin: "test", Version: "v0.1.0", Role: "destination"})
		d, log := loggedDestinationServer(&writeLog{}, Metrics{Set: set, LogEvery: time.Minute})
		open(t, &d.instance)
		r := newDestinationRun(t, d).run()
		lines := func() []string {
			return regexp.MustCompile(`(?m)^.*destination progress.*$`).FindAllString(log.String(), -1)
		}
		time.Sleep(90 * time.Second) // idle
		synctest.Wait()
		if got := lines(); len(got) != 0 {
			t.Fatalf("an idle destination logged %q", got)
		}
		r.send(1, 1500)
		time.Sleep(time.Minute)
		synctest.Wait()
		got := lines()
		if len(got) != 1 || !strings.Contains(got[0], "destination progress\" records_in=1500 records_acked=1500 records_nacked=0 batches=") {
			t.Fatalf("progress lines %q, want one that counts 1500 records", got)
		}
		time.Sleep(3 * time.Minute) // idle again
		synctest.Wait()
		if again := lines(); len(again) != 1 {
			t.Fatalf("progress lines %q after an idle time, want the one before", again)
		}
		r.finish("1500")
	})
}
