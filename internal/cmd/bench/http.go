package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/connkit/connkit/internal/conduit"
	"github.com/connkit/connkit/internal/metrics/metricstest"
)

// httpSetup is what every cell of httpMode shares.
type httpSetup struct {
	conduit, plugin  string        // the Conduit binary and the http plugin
	latency          time.Duration // how long the server takes to answer a request
	batch            int           // sdk.batch.size
	rate             float64       // records per second the generator makes; 0: as fast as it can
	warmup, duration time.Duration
	sinks            []sink // the kinds of server measured against
	maxConcurrent    int    // the limit server's: the most requests in flight it takes
	workers          int    // the queueing and dropping servers': requests served together
	backlog          int    // the dropping and threaded servers' listen backlog
	threadHolds      time.Duration
	slowing          time.Duration
	settings         []string // the sdk.write.concurrency settings measured against each server
}

// httpCell is one pipeline of httpMode: the http destination with a
// sdk.write.concurrency setting, against a kind of server.
type httpCell struct {
	conduitCell
	sink        sink
	concurrency string // sdk.write.concurrency: a number, or auto, for which the parameter is left unset

	// What the plugin's own metrics said at the end of the window: its
	// connkit_write_concurrency_limit and connkit_writes_in_flight
	// gauges, and connkit_records_nacked_total; and over the window, the
	// mean of its connkit_write_seconds, in seconds. -1 if unread.
	limit, inFlight, nacked, meanWrite float64
	// counted is how many records Conduit counted through the pipeline,
	// from its start to its graceful stop; -1 if unread, stopErr saying
	// why if the pipeline did not stop gracefully.
	counted float64
	stopErr error
	served  sinkStats // what the server counted, from Conduit's start to its exit
	// overflows is what the kernel's ListenOverflows counted over the
	// same time; -1 if unread.
	overflows int64
}

func newHTTPCell(engine string, k sink, concurrency string, path string) *httpCell {
	return &httpCell{
		conduitCell: conduitCell{engine: engine, plugin: plugin{name: "connkit", path: path}},
		sink:        k, concurrency: concurrency,
		limit: -1, inFlight: -1, nacked: -1, meanWrite: -1, counted: -1, overflows: -1,
	}
}

// name says which cell c is, in progress lines and notes.
func (c *httpCell) name() string {
	return fmt.Sprintf("%s engine, %s server, sdk.write.concurrency %s", c.engine, c.sink, c.concurrency)
}

// noRecovery makes Conduit fail a pipeline at its first error instead of
// restarting it (it restarts one without end by default), so that a
// destination that broke the order of its acks shows as a degraded
// pipeline, not as a restart whose records come again.
var noRecovery = []string{"--pipelines.error-recovery.max-retries", "0"}

// httpMode measures connkit's http destination, bound by latency, in real
// Conduit: Conduit's builtin generator into it as fast as it can, against
// servers on loopback that answer each batch after a fixed latency (see
// sink): one that serves any number together, with sdk.write.concurrency
// auto and 1; one that refuses requests beyond -max-concurrent in flight
// with 429, with auto; and with 1, -workers and auto, one of -workers
// workers that queues the requests beyond them, and one of HTTP/1.0 with
// a connection per request whose short listen backlog drops connections.
// It reports rows per second and mean latency from Conduit's own metrics
// over a window after a warm-up, the plugin's mean Write over the window
// and the limit auto settled at, and what the server saw: requests,
// refusals, the most in flight, and whether every record Conduit counted
// reached it once, its acks in order.
func httpMode(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("http", flag.ExitOnError)
	var set httpSetup
	fs.StringVar(&set.plugin, "plugin", "bin/connkit-http", "the http destination plugin")
	var cf conduitFlags
	cf.define(fs, "default")
	fs.DurationVar(&set.latency, "latency", 20*time.Millisecond, "how long the server takes to answer each request")
	fs.IntVar(&set.batch, "batch", 10, "sdk.batch.size of the destination: records per request")
	sinkNames := fs.String("sinks", "plain,limit,queueing,dropping,threaded,slowing", "comma-separated kinds of server to measure against: plain, limit (see -max-concurrent), queueing and dropping (see -workers and -backlog), threaded (see -backlog and -thread-holds), slowing (see -slowing)")
	settings := fs.String("concurrencies", "1,2,4,8,auto", "comma-separated sdk.write.concurrency settings measured against each server: numbers, and auto")
	fs.DurationVar(&set.threadHolds, "thread-holds", 1500*time.Microsecond, "how long each request holds the threaded server's interpreter lock")
	fs.DurationVar(&set.slowing, "slowing", 5*time.Millisecond, "how much longer the slowing server answers for each request in flight")
	fs.IntVar(&set.maxConcurrent, "max-concurrent", 4, "the limit server refuses with 429 a request that would make more than this many in flight; 0 leaves its cell out")
	fs.IntVar(&set.workers, "workers", 4, "requests the queueing and dropping servers serve together, also the sdk.write.concurrency measured against them between 1 and auto")
	fs.IntVar(&set.backlog, "backlog", 5, "the dropping and threaded servers' listen backlog")
	fs.Float64Var(&set.rate, "rate", 0, "records per second the generator makes; 0: as fast as it can")
	fs.DurationVar(&set.warmup, "warmup", 3*time.Second, "time after the first record that a cell leaves out of its measurement")
	fs.DurationVar(&set.duration, "duration", 10*time.Second, "measurement window of a cell")
	out := fs.String("out", "bench/results", "directory for http.md")
	_ = fs.Parse(args)

	engines, err := cf.check()
	if err != nil {
		return err
	}
	set.conduit = cf.bin
	if _, err := os.Stat(set.plugin); err != nil {
		return fmt.Errorf("-plugin: %w (make build builds it)", err)
	}
	switch {
	case set.latency < 0:
		return errors.New("-latency: expected a duration of at least 0")
	case set.batch < 1:
		return errors.New("-batch: expected at least 1")
	case set.maxConcurrent < 0:
		return errors.New("-max-concurrent: expected 0 (no such cell) or more")
	case set.workers < 1:
		return errors.New("-workers: expected at least 1")
	case set.backlog < 0:
		return errors.New("-backlog: expected 0 or more")
	case set.rate < 0:
		return errors.New("-rate: expected 0 (as fast as it can) or more")
	}
	if set.sinks, err = parseSinks(*sinkNames); err != nil {
		return err
	}
	if set.settings, err = parseConcurrencies(*settings); err != nil {
		return err
	}

	// The settings alternate cell by cell, so that whatever the machine
	// does meanwhile falls on each alike.
	var cells []*httpCell
	for _, e := range engines {
		for _, k := range set.sinks {
			for _, concurrency := range set.concurrencies(k) {
				cells = append(cells, newHTTPCell(e, k, concurrency, set.plugin))
			}
		}
	}
	if len(cells) == 0 {
		return errors.New("no cells: -sinks limit alone with -max-concurrent 0")
	}
	start := time.Now()
	for i, c := range cells {
		fmt.Fprintf(os.Stderr, "\r\033[K[%d/%d %s] %s ...", i+1, len(cells), time.Since(start).Round(time.Second), c.name())
		c.run(ctx, set)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if c.err != nil {
			fmt.Fprintf(os.Stderr, "\n%s: %v\n", c.name(), c.err)
		}
	}
	fmt.Fprintf(os.Stderr, "\r\033[Kdone in %v\n", time.Since(start).Round(time.Second))
	table := httpReport(conduitRelease(set.conduit), cells, engines, set)
	return publish(*out, table, map[string]string{"http.md": table})
}

// run measures the cell against a server of its own, whose counts then
// cover the cell alone.
func (c *httpCell) run(ctx context.Context, set httpSetup) {
	srv, url, closeServer, err := set.serve(c.sink)
	if err != nil {
		c.err = err
		return
	}
	overflows, read := listenOverflows()
	c.runPipeline(ctx, set, url)
	closeServer()
	c.served = srv.stats()
	if after, ok := listenOverflows(); read && ok {
		c.overflows = after - overflows
	}
}

// runPipeline runs the cell's pipeline in Conduit, into the server at url:
// it measures a window, reads the plugin's metrics at its end, then stops
// the pipeline gracefully and counts the records Conduit counted through
// it, and stops Conduit.
func (c *httpCell) runPipeline(ctx context.Context, set httpSetup, url string) {
	pipeline := httpPipeline(url, set.batch, set.rate, c.concurrency)
	s, dir, stop, err := startConduit(set.conduit, c.engine, pipeline, []string{set.plugin}, noRecovery...)
	if err != nil {
		c.err = err
		return
	}
	defer stop()
	if !c.warmIn(ctx, s, set.warmup) {
		return
	}
	// Read just before Conduit's histogram, at the window's start.
	start, startErr := scrapePlugin(s)
	if !c.measureIn(ctx, s, dir, 0, set.duration, 0) {
		return
	}
	// The window is measured; what follows is checked.
	var notes []string
	if end, err := scrapePlugin(s); err != nil {
		notes = append(notes, "the plugin's metrics: "+oneLine(err))
	} else {
		c.readPlugin(end)
		if startErr != nil {
			notes = append(notes, "the plugin's metrics at the window's start: "+oneLine(startErr))
		} else if w := writeSeconds(end).minus(writeSeconds(start)); w.count > 0 {
			c.meanWrite = w.mean()
		}
	}
	if c.stopErr = s.StopPipeline(measuredPipeline, 30*time.Second); c.stopErr == nil {
		c.counted, _ = s.Latency(measuredPipeline)
	}
	if err := s.Stop(15 * time.Second); err != nil {
		notes = append(notes, "stop: "+oneLine(err))
	}
	c.note = strings.Join(notes, "; ")
}

// httpPipeline is a cell's pipeline: Conduit's builtin generator making
// structured records of three fields (its schema extraction on, as by
// default) at rate (0: as fast as it can) into the standalone http
// destination POSTing to url, batch records a request, with
// sdk.write.concurrency (auto: the parameter left unset), serving its
// metrics on a loopback port the kernel picks.
func httpPipeline(url string, batch int, rate float64, concurrency string) string {
	generator := map[string]string{
		"format.type":               "structured",
		"format.options.id":         "int",
		"format.options.first_name": "string",
		"format.options.last_name":  "string",
	}
	if rate > 0 {
		generator["rate"] = strconv.FormatFloat(rate, 'g', -1, 64)
	}
	destination := map[string]string{
		"url":                 url,
		"sdk.batch.size":      strconv.Itoa(batch),
		"sdk.metrics.address": "127.0.0.1:0",
	}
	if concurrency != "auto" {
		destination["sdk.write.concurrency"] = concurrency
	}
	return conduit.Pipeline{
		ID:          measuredPipeline,
		Source:      conduit.Component{ID: "generator", Plugin: "builtin:generator", Settings: generator},
		Destination: conduit.Component{ID: "http", Plugin: "standalone:http", Settings: destination},
	}.File()
}

// servingMetrics is the line a connkit plugin logs once it serves its
// metrics, with the address it serves them at.
var servingMetrics = regexp.MustCompile(`serving metrics at http://([^/"\s]+)/metrics`)

// scrapePlugin reads the plugin's metrics where its line in Conduit's log
// says it serves them.
func scrapePlugin(s *conduit.Server) (metricstest.Samples, error) {
	m := servingMetrics.FindStringSubmatch(s.Log())
	if m == nil {
		return nil, errors.New("no line in Conduit's log says where the plugin serves them")
	}
	return metricstest.Scrape(m[1])
}

// readPlugin reads what the cell reports of the plugin's metrics at the
// end of the window from samples.
func (c *httpCell) readPlugin(samples metricstest.Samples) {
	read := func(name string) float64 {
		if v, n := samples.Sum(name); n > 0 {
			return v
		}
		return -1
	}
	c.limit, c.inFlight = read("connkit_write_concurrency_limit"), read("connkit_writes_in_flight")
	// A series for each kind of nack, once there is one: none is 0.
	c.nacked, _ = samples.Sum("connkit_records_nacked_total")
}

// writeSeconds returns the count and sum of the plugin's
// connkit_write_seconds in samples: its Writes so far, and how long they
// took together.
func writeSeconds(samples metricstest.Samples) histogram {
	count, _ := samples.Sum("connkit_write_seconds_count")
	sum, _ := samples.Sum("connkit_write_seconds_sum")
	return histogram{count: count, sum: sum}
}

// serveLoopback serves h on a loopback port the kernel picks; url is
// where. closeServer returns once every request has been answered, or
// after 10 s, when it closes what is left.
func serveLoopback(h http.Handler) (url string, closeServer func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // ends with Shutdown or Close
	}()
	return "http://" + ln.Addr().String() + "/records", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
		<-done
	}, nil
}

// inOrder says whether Conduit kept the pipeline running and had every
// record it counted acknowledged, and if not, why: the cell failed (the
// pipeline degraded, say), it did not stop gracefully, the plugin nacked
// records, or Conduit counted other than the distinct positions the
// server accepted.
func (c *httpCell) inOrder() (ok bool, why string) {
	switch {
	case c.err != nil:
		return false, oneLine(c.err)
	case c.stopErr != nil:
		return false, "graceful stop: " + oneLine(c.stopErr)
	case c.nacked > 0:
		return false, fmt.Sprintf("the plugin nacked %s records", thousands(c.nacked))
	case c.nacked < 0:
		return false, "the plugin's nacks unread"
	case c.counted != float64(c.served.distinct):
		return false, fmt.Sprintf("Conduit counted %s records, the server accepted %s", thousands(c.counted), thousands(float64(c.served.distinct)))
	}
	return true, ""
}

// baseline returns the cell c is compared with: the cell of c's engine
// that writes one batch at a time against c's kind of server, else
// against the plain server; or nil.
func baseline(cells []*httpCell, c *httpCell) *httpCell {
	var plain *httpCell
	for _, b := range cells {
		switch {
		case b.engine != c.engine || b.concurrency != "1":
		case b.sink == c.sink:
			return b
		case b.sink == sinkPlain:
			plain = b
		}
	}
	return plain
}

func httpReport(release string, cells []*httpCell, engines []string, set httpSetup) string {
	var t strings.Builder
	source := "as fast as it can"
	if set.rate > 0 {
		source = fmt.Sprintf("at %g records/s", set.rate)
	}
	fmt.Fprintf(&t, "connkit's http destination, bound by latency, in real %s (%s engine): Conduit's builtin generator (structured id, first_name, last_name; %s) → the standalone http destination, sdk.batch.size %d and no delay, POSTing each batch as a JSON array of OpenCDC JSON records to a server on loopback that answers each request with 200 after %v, of one of the kinds below, a table for each. ",
		release, strings.Join(engines, " and "), source, set.batch, set.latency)
	t.WriteString("sdk.write.concurrency is auto (left unset: from one Write in flight, one more while the last added pays, down when Writes slow or the sink pushes back, up to 32; see README's Writes in flight together) or the most Writes in flight together (1: one at a time).\n\n")
	fmt.Fprintf(&t, "One Conduit per cell, the settings alternating; a cell measures %v after %v of warm-up, as the difference of two readings of Conduit's conduit_pipeline_execution_duration_seconds (from the source's read to the destination's ack): rows/s is its count over the window, mean its sum over its count, and × 1 its rows/s over the row with concurrency 1 in the same table. ", set.duration, set.warmup)
	t.WriteString("Mean Write is the plugin's own connkit_write_seconds over the same window, read from its metrics at the window's start and end: the difference of its sum over the difference of its count, how long one call of the connector's Write took, from connecting to the answer (here one request; a retry is a Write of its own). ")
	t.WriteString("The limit is the plugin's connkit_write_concurrency_limit at the end of the window, its connkit_writes_in_flight then in parentheses. ")
	t.WriteString("The pipeline is then stopped gracefully through Conduit's API, and Conduit after it. The server's counts cover the cell's whole run, from Conduit's start to its exit: requests, the share it refused, the most in flight together, and the distinct positions of the records it accepted beside the records Conduit counted through the pipeline from its start to its stop; a duplicate is a position accepted again. ")
	t.WriteString("Conduit fails a pipeline whose destination acknowledges records out of order, and runs here with --pipelines.error-recovery.max-retries 0, so that a failure is not hidden by a restart: acks in order is yes when the pipeline ran until its graceful stop without degrading, the plugin nacked nothing, and Conduit counted as many records as the server accepted distinct positions. ")
	t.WriteString("On a busy two-core machine, compare within a run.\n\n")
	if slices.Contains(engines, "v2") {
		t.WriteString("The v2 engine (Conduit v0.14.0's, at least) writes a batch of the source's to the destination and waits for all its acks before it reads the next: with no batch settings on the source, as here, each request holds one record, and one is in flight, whatever sdk.write.concurrency says.\n\n")
	}

	tables := 0
	for _, k := range sinks {
		i := slices.IndexFunc(cells, func(c *httpCell) bool { return c.sink == k })
		if i < 0 {
			continue
		}
		if tables++; tables > 1 {
			t.WriteString("\n")
		}
		t.WriteString(set.describe(k) + "\n\n")
		head := "| engine | sdk.write.concurrency | rows/s | mean | × 1 | mean Write | limit (in flight) | requests | refused | max in flight |"
		if k == sinkDropping || k == sinkThreaded {
			head += " listen overflows |"
		}
		writeTableHead(&t, head+" records: Conduit / server | duplicates | acks in order |")
		for _, c := range cells[i:] {
			if c.sink == k {
				writeHTTPRow(&t, c, baseline(cells, c))
			}
		}
		for _, e := range engines {
			if line := autoAgainstBest(cells, e, k); line != "" {
				t.WriteString("\n" + line + "\n")
			}
		}
	}
	var notes []string
	for _, c := range cells {
		if c.served.malformed > 0 {
			notes = append(notes, fmt.Sprintf("%s: the server could not read %d requests", c.name(), c.served.malformed))
		}
		if c.note != "" {
			notes = append(notes, fmt.Sprintf("%s: %s", c.name(), c.note))
		}
	}
	if len(notes) > 0 {
		t.WriteString("\nAfter the window:\n\n")
		for _, n := range notes {
			t.WriteString("- " + n + "\n")
		}
	}
	return t.String()
}

// writeHTTPRow writes the row of a cell, its rows/s compared with the
// cell b (nil: none).
func writeHTTPRow(t *strings.Builder, c, b *httpCell) {
	fmt.Fprintf(t, "| %s | %s |", c.engine, c.concurrency)
	if c.err == nil {
		fmt.Fprintf(t, " %s | %s |", thousands(c.rate()), millis(c.hist.mean()))
	} else {
		t.WriteString(" – | – |")
	}
	if b != nil && b.err == nil && c.err == nil {
		fmt.Fprintf(t, " %.2fx |", c.rate()/b.rate())
	} else {
		t.WriteString(" |")
	}
	if c.meanWrite >= 0 {
		fmt.Fprintf(t, " %s |", millis(c.meanWrite))
	} else {
		t.WriteString(" – |")
	}
	if c.limit >= 0 && c.inFlight >= 0 {
		fmt.Fprintf(t, " %g (%g) |", c.limit, c.inFlight)
	} else {
		t.WriteString(" – |")
	}
	s := c.served
	fmt.Fprintf(t, " %s | %.1f%% | %d |", thousands(float64(s.requests)), 100*s.refusedShare(), s.maxInFlight)
	if c.sink == sinkDropping || c.sink == sinkThreaded {
		if c.overflows >= 0 {
			fmt.Fprintf(t, " %s |", thousands(float64(c.overflows)))
		} else {
			t.WriteString(" – |")
		}
	}
	counted := "–"
	if c.counted >= 0 {
		counted = thousands(c.counted)
	}
	fmt.Fprintf(t, " %s / %s | %s |", counted, thousands(float64(s.distinct)), thousands(float64(s.duplicates())))
	if ok, why := c.inOrder(); ok {
		t.WriteString(" yes |\n")
	} else {
		fmt.Fprintf(t, " no: %s |\n", why)
	}
}

// autoAgainstBest says how the auto cell of engine e against server k
// did beside the best cell with a fixed sdk.write.concurrency (the most
// rows/s): its rows/s and mean Write over that cell's, and over the cell
// of one Write at a time; empty without both.
func autoAgainstBest(cells []*httpCell, e string, k sink) string {
	var auto, best, one *httpCell
	for _, c := range cells {
		switch {
		case c.engine != e || c.sink != k || c.err != nil:
		case c.concurrency == "auto":
			auto = c
		case best == nil || c.rate() > best.rate():
			best = c
		}
		if c.engine == e && c.sink == k && c.err == nil && c.concurrency == "1" {
			one = c
		}
	}
	if auto == nil || best == nil || auto.meanWrite <= 0 || best.meanWrite <= 0 {
		return ""
	}
	rate, write := auto.rate()/best.rate(), auto.meanWrite/best.meanWrite
	met := rate >= 0.8 && write <= 1.5 && (one == nil || auto.rate() >= one.rate())
	line := fmt.Sprintf("%s engine, auto against the best fixed setting (%s, %s rows/s, Write %s): %.2fx its rows/s at %.2fx its mean Write", e, best.concurrency, thousands(best.rate()), millis(best.meanWrite), rate, write)
	if one != nil {
		line += fmt.Sprintf(", %.2fx one Write at a time", auto.rate()/one.rate())
	}
	return line + fmt.Sprintf("; at least 0.8x at most 1.5x, and at least one Write's: %s.", map[bool]string{true: "yes", false: "no"}[met])
}
