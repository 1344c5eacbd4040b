package main

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/metrics/metricstest"
	"github.com/matryer/is"
)

// The report has a table for each kind of server, under what it does. A
// row says how fast its cell was beside the cell with concurrency 1
// against the same kind (the plain server's for the one that refuses),
// how long a Write took, where auto settled, what the server saw (the
// dropping server's table with the kernel's listen overflows), and
// whether the acks kept their order, with the reason when they did not: a
// pipeline that degraded, records the plugin nacked, or a count of
// Conduit's other than the positions the server accepted.
func TestHTTPReportRows(t *testing.T) {
	is := is.New(t)
	cell := func(k sink, concurrency string, rowsPerSecond float64) *httpCell {
		c := newHTTPCell("default", k, concurrency, "bin/connkit-http")
		records := rowsPerSecond * 10
		c.window = window{records: records, elapsed: 10, hist: histogram{count: records, sum: records * 0.05}}
		c.limit, c.inFlight, c.nacked, c.meanWrite, c.counted = 12, 11, 0, 0.0234, 20000
		c.served = sinkStats{requests: 2000, accepted: 2000, maxInFlight: 12, records: 20000, distinct: 20000}
		return c
	}
	auto, one := cell(sinkPlain, "auto", 2500), cell(sinkPlain, "1", 500)
	one.limit, one.inFlight, one.served.maxInFlight = 1, 1, 1
	refused := cell(sinkLimit, "auto", 1500)
	refused.served.requests, refused.served.refused = 2200, 200
	lost := cell(sinkLimit, "auto", 1500)
	lost.served.records, lost.served.distinct = 19990, 19980 // ten records twice, twenty never
	nacked := cell(sinkLimit, "auto", 1500)
	nacked.nacked = 3
	degraded := newHTTPCell("default", sinkLimit, "auto", "bin/connkit-http")
	degraded.err = errors.New("pipeline degraded during the measurement: acks\nout of order")
	degraded.served = sinkStats{requests: 40, accepted: 30, refused: 10, maxInFlight: 4, records: 300, distinct: 300}
	queued1, queued4, queuedAuto := cell(sinkQueueing, "1", 450), cell(sinkQueueing, "4", 1800), cell(sinkQueueing, "auto", 1800)
	queuedAuto.meanWrite, queuedAuto.limit, queuedAuto.inFlight, queuedAuto.served.maxInFlight = 0.152, 30, 30, 30
	dropped1, droppedAuto := cell(sinkDropping, "1", 430), cell(sinkDropping, "auto", 215)
	dropped1.overflows, droppedAuto.overflows = 0, 1234
	droppedAuto.note = "stop: context deadline exceeded"

	set := httpSetup{latency: 20 * time.Millisecond, batch: 10, warmup: 3 * time.Second, duration: 10 * time.Second, maxConcurrent: 4, workers: 4, backlog: 5}
	cells := []*httpCell{auto, one, refused, lost, nacked, degraded, queued1, queued4, queuedAuto, dropped1, droppedAuto}
	report := httpReport("Conduit v0.14.0", cells, []string{"default"}, set)
	is.True(strings.Contains(report, "in real Conduit v0.14.0 (default engine): Conduit's builtin generator (structured id, first_name, last_name; as fast as it can)"))
	is.True(strings.Contains(report, "sdk.batch.size 10 and no delay"))
	is.True(strings.Contains(report, "answers each request with 200 after 20ms"))
	is.True(strings.Contains(report, "a cell measures 10s after 3s of warm-up"))
	is.True(strings.Contains(report, "refusing with 429 and Retry-After: 0 a request that would make more than 4 in flight"))
	is.True(strings.Contains(report, "a server of 4 workers, each serving a request for 20ms"))
	is.True(strings.Contains(report, "behind a listen backlog of 5"))
	tables := map[string][]string{} // the rows under each kind of server
	var kind string
	for line := range strings.SplitSeq(report, "\n") {
		if k, _, ok := strings.Cut(strings.TrimPrefix(line, "**"), "**:"); ok && strings.HasPrefix(line, "**") {
			kind = k
		}
		if strings.HasPrefix(line, "| default |") {
			tables[kind] = append(tables[kind], line)
		}
	}
	is.Equal(tables, map[string][]string{
		"plain": {
			"| default | auto | 2,500 | 50 ms | 5.00x | 23 ms | 12 (11) | 2,000 | 0.0% | 12 | 20,000 / 20,000 | 0 | yes |",
			"| default | 1 | 500 | 50 ms | 1.00x | 23 ms | 1 (1) | 2,000 | 0.0% | 1 | 20,000 / 20,000 | 0 | yes |",
		},
		"limit": {
			"| default | auto | 1,500 | 50 ms | 3.00x | 23 ms | 12 (11) | 2,200 | 9.1% | 12 | 20,000 / 20,000 | 0 | yes |",
			"| default | auto | 1,500 | 50 ms | 3.00x | 23 ms | 12 (11) | 2,000 | 0.0% | 12 | 20,000 / 19,980 | 10 | no: Conduit counted 20,000 records, the server accepted 19,980 |",
			"| default | auto | 1,500 | 50 ms | 3.00x | 23 ms | 12 (11) | 2,000 | 0.0% | 12 | 20,000 / 20,000 | 0 | no: the plugin nacked 3 records |",
			"| default | auto | – | – | | – | – | 40 | 25.0% | 4 | – / 300 | 0 | no: pipeline degraded during the measurement: acks out of order |",
		},
		"queueing": {
			"| default | 1 | 450 | 50 ms | 1.00x | 23 ms | 12 (11) | 2,000 | 0.0% | 12 | 20,000 / 20,000 | 0 | yes |",
			"| default | 4 | 1,800 | 50 ms | 4.00x | 23 ms | 12 (11) | 2,000 | 0.0% | 12 | 20,000 / 20,000 | 0 | yes |",
			"| default | auto | 1,800 | 50 ms | 4.00x | 152 ms | 30 (30) | 2,000 | 0.0% | 30 | 20,000 / 20,000 | 0 | yes |",
		},
		"dropping": {
			"| default | 1 | 430 | 50 ms | 1.00x | 23 ms | 12 (11) | 2,000 | 0.0% | 12 | 0 | 20,000 / 20,000 | 0 | yes |",
			"| default | auto | 215 | 50 ms | 0.50x | 23 ms | 12 (11) | 2,000 | 0.0% | 12 | 1,234 | 20,000 / 20,000 | 0 | yes |",
		},
	})
	is.True(strings.Contains(report, "| max in flight | listen overflows | records: Conduit / server |"))
	is.True(strings.Contains(report, "\n- default engine, dropping server, sdk.write.concurrency auto: stop: context deadline exceeded\n"))
}

// A run measures the kinds of server in one order, whatever order -sinks
// names them in, each with the settings of -concurrencies; a name that is
// no kind, or a setting that is none, is an error that says which are.
func TestHTTPCells(t *testing.T) {
	is := is.New(t)
	got, err := parseSinks("slowing, dropping, plain")
	is.NoErr(err)
	is.Equal(got, []sink{sinkPlain, sinkDropping, sinkSlowing})
	_, err = parseSinks("plain,dropped")
	is.Equal(err.Error(), `-sinks: got "dropped", expected plain, limit, queueing, dropping, threaded or slowing`)

	settings, err := parseConcurrencies("1, 2,4,8,auto")
	is.NoErr(err)
	set := httpSetup{maxConcurrent: 4, workers: 4, settings: settings}
	is.Equal(set.concurrencies(sinkThreaded), []string{"1", "2", "4", "8", "auto"})
	is.Equal(set.concurrencies(sinkLimit), []string{"1", "2", "4", "8", "auto"})
	set.maxConcurrent = 0
	is.Equal(len(set.concurrencies(sinkLimit)), 0) // no such cell
	for _, bad := range []string{"0", "1,1", "fast"} {
		_, err := parseConcurrencies(bad)
		is.True(err != nil && strings.Contains(err.Error(), "-concurrencies: got"))
	}
}

// The report says of each server how auto did beside the best fixed
// setting: its rows/s and mean Write over that cell's, and whether the
// targets hold.
func TestHTTPAutoAgainstBest(t *testing.T) {
	is := is.New(t)
	cell := func(concurrency string, rate, write float64) *httpCell {
		c := newHTTPCell("default", sinkThreaded, concurrency, "")
		c.records, c.elapsed, c.meanWrite = rate*10, 10, write
		return c
	}
	cells := []*httpCell{cell("1", 444, 0.022), cell("8", 3054, 0.024), cell("auto", 2900, 0.026)}
	is.Equal(autoAgainstBest(cells, "default", sinkThreaded), "default engine, auto against the best fixed setting (8, 3,054 rows/s, Write 24 ms): 0.95x its rows/s at 1.08x its mean Write, 6.53x one Write at a time; at least 0.8x at most 1.5x, and at least one Write's: yes.")
	cells[2] = cell("auto", 257, 0.255)
	is.True(strings.HasSuffix(autoAgainstBest(cells, "default", sinkThreaded), "at least one Write's: no."))
}

// auto is the parameter left unset, as a user who never heard of it has
// it; a number is set.
func TestHTTPPipelineConcurrency(t *testing.T) {
	is := is.New(t)
	auto := httpPipeline("http://127.0.0.1:1/records", 10, 0, "auto")
	is.True(!strings.Contains(auto, "sdk.write.concurrency"))
	is.True(!strings.Contains(auto, "rate")) // as fast as it can
	is.True(strings.Contains(auto, `sdk.batch.size: "10"`))
	is.True(strings.Contains(auto, `url: "http://127.0.0.1:1/records"`))
	one := httpPipeline("http://127.0.0.1:1/records", 10, 500, "1")
	is.True(strings.Contains(one, `sdk.write.concurrency: "1"`))
	is.True(strings.Contains(one, `rate: "500"`))
}

// The mean Write over a window is what the plugin's connkit_write_seconds
// added between two scrapes: the difference of its sums over the
// difference of its counts, whatever Writes came before.
func TestWriteSecondsOverAWindow(t *testing.T) {
	is := is.New(t)
	scrape := func(count, sum string) metricstest.Samples {
		s, err := metricstest.Parse(`connkit_write_seconds_bucket{connector_id="x",le="0.0256"} ` + count + "\n" +
			`connkit_write_seconds_count{connector_id="x"} ` + count + "\n" +
			`connkit_write_seconds_sum{connector_id="x"} ` + sum + "\n" +
			`connkit_writes_in_flight{connector_id="x"} 3` + "\n")
		is.NoErr(err)
		return s
	}
	w := writeSeconds(scrape("150", "7.5")).minus(writeSeconds(scrape("50", "5.5")))
	is.Equal(w.count, 100.0)
	is.True(math.Abs(w.mean()-0.02) < 1e-9) // 2 s over 100 Writes
}
