package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/connkit/connkit/internal/chart"
	"github.com/connkit/connkit/internal/conduit"
)

// measuredPipeline is the ID of the pipeline a cell measures.
const measuredPipeline = "batch"

// conduitTable is the table of the published batching experiment: the
// builtin generator's three structured fields, keyed by id.
const conduitTable = `CREATE TABLE IF NOT EXISTS batch_test (id bigint PRIMARY KEY, first_name text, last_name text)`

// conduitPipeline is the experiment's pipeline: Conduit's builtin generator
// making structured records as fast as it can (its schema extraction on, as
// by default), with source's extra settings, the key hoisted from the
// payload by Conduit's builtin processors (field.exclude drops the
// generator's random raw key, so that field.set can build a structured one:
// {"id": "<id>"}), and destination: postgresDestination or
// ceilingDestination.
func conduitPipeline(source map[string]string, destination conduit.Component) string {
	generator := map[string]string{
		"format.type":               "structured",
		"format.options.id":         "int",
		"format.options.first_name": "string",
		"format.options.last_name":  "string",
	}
	maps.Copy(generator, source)
	return conduit.Pipeline{
		ID:          measuredPipeline,
		Source:      conduit.Component{ID: "generator", Plugin: "builtin:generator", Settings: generator},
		Destination: destination,
		Processors: []conduit.Component{
			{ID: "drop-key", Plugin: "field.exclude", Settings: map[string]string{
				"fields": ".Key",
				// It touches the key alone: no need to decode the payload.
				"sdk.schema.decode.payload.enabled": "false",
				"sdk.schema.encode.payload.enabled": "false",
			}},
			{ID: "hoist-key", Plugin: "field.set", Settings: map[string]string{"field": ".Key.id", "value": "{{ .Payload.After.id }}"}},
		},
	}.File()
}

// postgresDestination is the standalone Postgres destination of the
// experiment, writing into the database at url, with extra settings.
func postgresDestination(url string, extra map[string]string) conduit.Component {
	settings := map[string]string{"url": url, "table": "batch_test"}
	maps.Copy(settings, extra)
	return conduit.Component{ID: "postgres", Plugin: "standalone:postgres", Settings: settings}
}

// ceilingDestination is Conduit's builtin log destination logging at trace
// level, below Conduit's own, decoding nothing (a standalone destination
// decodes in its own process) and batching nothing (the builtin log's SDK
// batches at a cost no plugin's would show in Conduit): it does nothing with
// a record, so that its pipeline carries what Conduit itself can.
var ceilingDestination = conduit.Component{ID: "log", Plugin: "builtin:log", Settings: map[string]string{
	"level":                              "trace",
	"sdk.schema.extract.key.enabled":     "false",
	"sdk.schema.extract.payload.enabled": "false",
}}

// ceiling is the name of the pipeline into ceilingDestination among the
// plugins of a run.
const ceiling = "ceiling"

// load is a row of the experiment: a batch size (0: no batch settings)
// under the generator's rate (0: as fast as it can); idle marks the row
// that measures a lone record. row is its place among the rows, so that a
// batch size given twice makes two rows, each measured in cells of its own.
type load struct {
	batch      int
	sourceRate float64
	idle       bool
	row        int
}

// conduitLoads returns the rows of the experiment: a load for each batch
// size, in order, the generator at rate, and the idle row at idle records
// per second unless idle is 0. A size repeated is a row again: repeated
// sizes, their cells alternating, are how a noisy machine is measured.
func conduitLoads(sizes []int, rate, idle float64) []load {
	var loads []load
	for _, size := range sizes {
		loads = append(loads, load{batch: size, sourceRate: rate, row: len(loads)})
	}
	if idle > 0 {
		loads = append(loads, load{sourceRate: idle, idle: true, row: len(loads)})
	}
	return loads
}

func (l load) label() string {
	if l.idle {
		return fmt.Sprintf("idle: %g records/s, not set", l.sourceRate)
	}
	return batchLabel(l.batch)
}

// conduitCell is one measurement: a plugin in an engine under a load.
type conduitCell struct {
	engine string
	load
	plugin plugin
	window
	rows int64  // rows in the table when Conduit has stopped
	note string // what went wrong after the window, if anything
	err  error
}

// window is what a pipeline did in a measured window: the records through
// it, from two readings of its latency histogram, and the window's seconds;
// what Conduit, the plugins and PostgreSQL (its postmaster and backends)
// used meanwhile; and the Postgres destination's connections at its end.
type window struct {
	records, elapsed                   float64
	hist                               histogram
	conduitUse, pluginUse, postgresUse resourceUse
	conns                              destinationConns
}

func (w window) rate() float64 { return w.records / w.elapsed }

// used is what each process used: Conduit, the plugins, PostgreSQL.
func (w window) used() []resourceUse {
	return []resourceUse{w.conduitUse, w.pluginUse, w.postgresUse}
}

// measure ends a window of pipeline in s that began at t0 with the reading
// before (zero: before any record), ending sampling too.
func (w *window) measure(s *conduit.Server, pipeline string, before histogram, t0 time.Time, sampling *sampling) error {
	after, t1, err := readHistogram(s.URL, pipeline)
	used := sampling.finish()
	w.conduitUse, w.pluginUse, w.postgresUse = used[0], used[1], used[2]
	if err != nil {
		return err
	}
	w.hist = after.minus(before)
	w.records, w.elapsed = w.hist.count, t1.Sub(t0).Seconds()
	return nil
}

// conduitMode runs the published batching experiment in real Conduit, one
// Conduit per cell, each plugin in turn and the ceiling pipeline after
// them, and reports rows per second and latency from Conduit's own metrics
// over a window after a warm-up, and what each process used meanwhile.
func conduitMode(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("conduit", flag.ExitOnError)
	var f pgFlags
	f.define(fs, "Postgres destination plugin named postgres", "second destination plugin named postgres, measured side by side")
	f.defineConfig(fs)
	var cf conduitFlags
	cf.define(fs, "default,v2")
	sizes := intsFlag(fs, "batch-sizes", "0,1,10,100,1000,10000", 0, "comma-separated sdk.batch.size values; 0 sets no batch parameter at all")
	delay := fs.Duration("batch-delay", time.Second, "sdk.batch.delay set with every batch size")
	v2Batching := fs.String("v2-batching", "both", "where the v2 engine gets the batch parameters: source, destination or both (the default engine: the destination)")
	warmup := fs.Duration("warmup", 5*time.Second, "time after the first record that a cell leaves out of its measurement")
	duration := fs.Duration("duration", 30*time.Second, "measurement window of a cell")
	records := fs.Int64("records", 0, "end a cell's window after this many records, if that comes before -duration; 0: -duration alone")
	withCeiling := fs.Bool("ceiling", true, "measure the ceiling too, the same pipeline, engine and source settings into Conduit's builtin log destination doing nothing, in every engine and load")
	rate := fs.Float64("rate", 0, "records per second the generator makes in every row: below the pipeline's capacity, latency without queueing; 0: as fast as it can, at saturation")
	idle := fs.Float64("idle-rate", 10, "records per second of an idle pipeline, measured with no batch settings as a last row; 0 leaves it out")
	out := fs.String("out", "bench/results", "directory for conduit.md, conduit.csv and conduit.svg")
	_ = fs.Parse(args)

	loads := conduitLoads(*sizes, *rate, *idle)
	engines, err := cf.check()
	if err != nil {
		return err
	}
	if !slices.Contains([]string{"source", "destination", "both"}, *v2Batching) {
		return fmt.Errorf("-v2-batching: got %q, expected source, destination or both", *v2Batching)
	}
	plugins, conn, closeDB, err := f.open(ctx, conduitTable)
	if err != nil {
		return err
	}
	defer closeDB()
	pgServer, err := postmaster(ctx, conn)
	if err != nil {
		return err
	}
	measured := plugins
	if *withCeiling {
		measured = append(slices.Clip(plugins), plugin{name: ceiling})
	}

	// The plugins alternate cell by cell, so that whatever the machine
	// does meanwhile falls on both alike.
	var cells []*conduitCell
	for _, e := range engines {
		for _, l := range loads {
			for _, p := range measured {
				cells = append(cells, &conduitCell{engine: e, load: l, plugin: p})
			}
		}
	}
	start := time.Now()
	for i, c := range cells {
		fmt.Fprintf(os.Stderr, "\r\033[K[%d/%d %s] %s engine, batch %s, %s ...", i+1, len(cells), time.Since(start).Round(time.Second),
			c.engine, c.label(), c.plugin.name)
		if _, err := conn.Exec(ctx, "TRUNCATE batch_test"); err != nil {
			return err
		}
		source, destination := loadSettings(c.engine, *v2Batching, c.load, *delay)
		maps.Copy(destination, c.plugin.config) // -config, -vs-config
		to := postgresDestination(f.url, destination)
		if c.plugin.name == ceiling {
			to = ceilingDestination
		}
		plugins, pg := []string{c.plugin.path}, pgServer
		var conns *connCounter
		if c.plugin.name == ceiling {
			plugins, pg = nil, 0 // its pipeline has no plugin and no PostgreSQL
		} else if conns, err = startCounting(ctx, conn); err != nil {
			return err
		}
		c.runIn(ctx, cf.bin, conduitPipeline(source, to), plugins, pg, conns, *warmup, *duration, *records)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if c.err == nil && c.plugin.name != ceiling {
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM batch_test").Scan(&c.rows); err != nil {
				return err
			}
			if c.rows == 0 {
				c.err = errors.New("no rows in batch_test")
			}
		}
	}
	fmt.Fprintf(os.Stderr, "\r\033[Kdone in %v\n", time.Since(start).Round(time.Second))

	table := conduitReport(conduitRelease(cf.bin), cells, names(plugins), engines, loads, *delay, *v2Batching, *warmup, *duration, *records)
	svg := conduitChart(cells, names(plugins), engines, loads, *delay)
	return publish(*out, table, map[string]string{"conduit.md": table, "conduit.csv": conduitCSV(cells), "conduit.svg": svg})
}

// runIn starts Conduit with the pipeline (its ID measuredPipeline) and
// plugins alone in its connectors directory, measures a window in it after
// the warm-up (see warmIn and measureIn), counts the Postgres
// destination's connections with conns (nil: none counted) while the
// pipeline still runs, and stops Conduit gracefully.
func (c *conduitCell) runIn(ctx context.Context, bin, pipeline string, plugins []string, pgServer int, conns *connCounter, warmup, duration time.Duration, records int64) {
	s, dir, stop, err := startConduit(bin, c.engine, pipeline, plugins)
	if err != nil {
		c.err = err
		return
	}
	defer stop()
	if !c.warmIn(ctx, s, warmup) || !c.measureIn(ctx, s, dir, pgServer, duration, records) {
		return
	}
	if c.conns, err = conns.count(ctx); err != nil {
		c.err = fmt.Errorf("count the destination's connections: %w", err)
		return
	}
	// The window is measured; what follows is only reported.
	if err := s.Stop(15 * time.Second); err != nil {
		c.note = "stop: " + oneLine(err)
	}
}

// warmIn waits in the running Conduit s for the pipeline's first record,
// then for warmup, which the window that follows leaves out. It returns
// false, with c.err saying why, if the pipeline degrades, Conduit exits,
// ctx ends or no record comes; Conduit is left running either way.
func (c *conduitCell) warmIn(ctx context.Context, s *conduit.Server, warmup time.Duration) bool {
	if !c.waitIn(ctx, s, "waiting for the first record", time.Minute, func() bool { count, _ := s.Latency(measuredPipeline); return count > 0 }) {
		return false
	}
	warmEnd := time.Now().Add(warmup)
	return c.waitIn(ctx, s, "during the warm-up", warmup+time.Second, func() bool { return !time.Now().Before(warmEnd) })
}

// measureIn measures a window in the running Conduit s, started in dir,
// as the difference of two readings of Conduit's histogram, so that what
// came before is left out, and what Conduit, the plugins and the
// PostgreSQL server pgServer (0: not measured) used between them. The
// window lasts duration, or until records records (0: no limit) have gone
// through. It returns false, with c.err saying why, as warmIn does, and
// if no record went through the window.
func (c *conduitCell) measureIn(ctx context.Context, s *conduit.Server, dir string, pgServer int, duration time.Duration, records int64) bool {
	sampling := startSampling(100*time.Millisecond, cellGroups(s, dir, pgServer)...)
	before, t0, err := readHistogram(s.URL, measuredPipeline)
	if err != nil {
		sampling.finish()
		c.err = err
		return false
	}
	end := t0.Add(duration)
	done := func() bool {
		if !time.Now().Before(end) {
			return true
		}
		if records <= 0 {
			return false
		}
		count, _ := s.Latency(measuredPipeline)
		return count-before.count >= float64(records)
	}
	if !c.waitIn(ctx, s, "during the measurement", duration+time.Second, done) {
		sampling.finish()
		return false
	}
	if err := c.measure(s, measuredPipeline, before, t0, sampling); err != nil {
		c.err = err
		return false
	}
	if c.records == 0 {
		c.err = errors.New("no records in the measurement window")
		return false
	}
	return true
}

// waitIn polls the running Conduit s until done says so, what saying when
// in the cell's error, and returns true; or false, with c.err saying why,
// if the pipeline degrades, Conduit exits, ctx ends or limit passes first.
func (c *conduitCell) waitIn(ctx context.Context, s *conduit.Server, what string, limit time.Duration, done func() bool) bool {
	fail := func(err error) {
		status, errText := s.PipelineState(measuredPipeline)
		if errText != "" {
			err = fmt.Errorf("%w (pipeline %s: %s)", err, status, errText)
		}
		c.err = err
	}
	deadline := time.Now().Add(limit)
	for !done() {
		if status, errText := s.PipelineState(measuredPipeline); status == "STATUS_DEGRADED" {
			c.err = fmt.Errorf("pipeline degraded %s: %s", what, errText)
			return false
		}
		select {
		case <-s.Done():
			fail(fmt.Errorf("conduit exited %s: %v", what, s.Err()))
			return false
		case <-ctx.Done():
			c.err = ctx.Err()
			return false
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			fail(fmt.Errorf("nothing after %v %s", limit, what))
			return false
		}
	}
	return true
}

// conduitFlags are the flags of the modes that run real Conduit: -conduit,
// its binary, and -engines, the engines to run it in.
type conduitFlags struct{ bin, engines string }

// define defines the flags, engines being the engines run by default.
func (f *conduitFlags) define(fs *flag.FlagSet, engines string) {
	fs.StringVar(&f.bin, "conduit", defaultConduit(), "Conduit binary (default $CONDUIT_BIN, else the one `make conduit` builds)")
	fs.StringVar(&f.engines, "engines", engines, "comma-separated engines: default, v2 (--preview.pipeline-arch-v2)")
}

// check returns the engines to run, or an error if -engines names another
// or -conduit no file.
func (f *conduitFlags) check() ([]string, error) {
	engines := strings.Split(f.engines, ",")
	for _, e := range engines {
		if e != "default" && e != "v2" {
			return nil, fmt.Errorf("-engines: got %q, expected default or v2", e)
		}
	}
	if _, err := os.Stat(f.bin); err != nil {
		return nil, fmt.Errorf("-conduit: %w (make conduit builds it)", err)
	}
	return engines, nil
}

// startConduit starts Conduit in engine (default or v2) in a directory of
// its own, with the pipeline and the plugins alone in its connectors
// directory (a plugin file's name does not matter: Conduit knows a plugin
// by the name in its specification), and flags, extra flags of `conduit
// run`; dir is that directory. stop kills Conduit and the plugins it
// started, and removes dir.
func startConduit(bin, engine, pipeline string, plugins []string, flags ...string) (s *conduit.Server, dir string, stop func(), err error) {
	dir, err = os.MkdirTemp("", "connkit-bench-conduit-")
	if err != nil {
		return nil, "", nil, err
	}
	if engine == "v2" {
		flags = append(slices.Clip(flags), "--preview.pipeline-arch-v2")
	}
	s, err = conduit.Start(conduit.Options{Bin: bin, Dir: dir, Pipeline: pipeline, Plugins: plugins, Flags: flags})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	return s, dir, func() { s.Kill(); killPlugins(dir); os.RemoveAll(dir) }, nil
}

// loadSettings returns the pipeline's extra source and destination
// settings for a load: the generator's rate, if the load has one; for a
// batch size other than 0, sdk.batch.size and sdk.batch.delay on the
// destination in the default engine, and where v2Batching says in the v2
// engine, whose batches are made by the source.
func loadSettings(engine, v2Batching string, l load, delay time.Duration) (source, destination map[string]string) {
	source, destination = map[string]string{}, map[string]string{}
	if l.sourceRate > 0 {
		source["rate"] = fmt.Sprintf("%g", l.sourceRate)
	}
	if l.batch == 0 {
		return source, destination
	}
	batch := map[string]string{"sdk.batch.size": strconv.Itoa(l.batch), "sdk.batch.delay": delay.String()}
	if engine == "v2" && v2Batching != "destination" {
		maps.Copy(source, batch)
	}
	if engine == "default" || v2Batching != "source" {
		maps.Copy(destination, batch)
	}
	return source, destination
}

// killPlugins kills the plugin processes Conduit started from dir's
// connectors directory and left behind: when Conduit is killed, not
// stopped, its plugins live on, and one writing into the table would
// disturb the next cell.
func killPlugins(dir string) {
	for _, pid := range pluginPids(dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func batchLabel(n int) string {
	if n == 0 {
		return "not set"
	}
	return strconv.Itoa(n)
}

// defaultConduit is $CONDUIT_BIN, or where `make conduit` puts Conduit.
func defaultConduit() string {
	if bin := os.Getenv("CONDUIT_BIN"); bin != "" {
		return bin
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "connkit", "conduit-v0.14.0")
}

func conduitReport(release string, cells []*conduitCell, plugins []string, engines []string, loads []load, delay time.Duration, v2Batching string, warmup, duration time.Duration, records int64) string {
	var t strings.Builder
	window := duration.String()
	if records > 0 {
		window = fmt.Sprintf("%v or %d records, whichever came first", duration, records)
	}
	fmt.Fprintf(&t, "Real %s: builtin generator (structured id, first_name, last_name; schema extraction on) → field.exclude .Key → field.set .Key.id → standalone Postgres destination into batch_test (id bigint PRIMARY KEY, first_name text, last_name text). ", release)
	fmt.Fprintf(&t, "Each batch size comes with sdk.batch.delay %v; \"not set\" means no batch parameters at all. The default engine gets them on the destination; the v2 engine (--preview.pipeline-arch-v2) on the %s.\n\n", delay,
		map[string]string{"source": "source", "destination": "destination", "both": "source and the destination"}[v2Batching])
	if r := loads[0].sourceRate; r > 0 && !loads[0].idle {
		fmt.Fprintf(&t, "The generator makes %g records per second in every row: below the pipeline's capacity, so that latency shows what batching adds without a queue.\n\n", r)
	}
	if l := loads[len(loads)-1]; l.idle {
		fmt.Fprintf(&t, "The idle row has the generator make %g records per second, no batch settings: how long a lone record takes through the pipeline.\n\n", l.sourceRate)
	}
	fmt.Fprintf(&t, "One Conduit per cell, the plugins alternating; a cell measures %s after %v of warm-up, as the difference of two readings of Conduit's conduit_pipeline_execution_duration_seconds histogram (from the source's read to the destination's ack). ", window, warmup)
	t.WriteString("rows/s is its count over the window; mean is its sum over its count; p99 is estimated from its buckets (1 ms … 5 s) as Prometheus's histogram_quantile does, interpolating linearly inside the bucket that holds the 99th percentile; \"> 5,000 ms\" means beyond the last bucket. ")
	t.WriteString("On a busy machine (two shared cores run Conduit, the plugin, PostgreSQL and whatever else runs there), the ratio of a row, its cells measured one after the other, says more than its absolute figures.\n\n")
	measured := plugins
	if c := findCell(cells, engines[0], loads[0], ceiling); c.engine != "" {
		measured = append(slices.Clip(plugins), ceiling)
		t.WriteString("The ceiling is the same pipeline, same engine and source settings, into Conduit's builtin log destination at trace level, with no batch settings, decoding nothing and writing nothing: no plugin, no PostgreSQL, what Conduit itself can carry (its batch column is the plugins' setting; in the default engine, where those go to the destination alone, the ceiling is the same pipeline in every row, measured again beside each). The percentage beside a plugin's rows/s is its share of the ceiling's.\n\n")
	}

	withCeiling := len(measured) > len(plugins)
	head := "| engine | batch |" + pluginColumns(plugins, " %[1]s rows/s | %[1]s mean | %[1]s p99 |", " rows/s ratio |")
	if withCeiling {
		head += " ceiling rows/s |"
	}
	writeTableHead(&t, head)
	var notes []string
	for _, e := range engines {
		for _, l := range loads {
			fmt.Fprintf(&t, "| %s | %s |", e, l.label())
			row := make([]*conduitCell, len(plugins))
			for i, p := range plugins {
				row[i] = findCell(cells, e, l, p)
				c := row[i]
				if c.err != nil {
					fmt.Fprintf(&t, " failed: %s | | |", oneLine(c.err))
					continue
				}
				p99, above := c.hist.quantile(0.99)
				gt := ""
				if above {
					gt = "> "
				}
				fmt.Fprintf(&t, " %s%s | %s | %s%s |", thousands(c.rate()), shareOf(c, findCell(cells, e, l, ceiling)), millis(c.hist.mean()), gt, millis(p99))
				if c.note != "" {
					notes = append(notes, fmt.Sprintf("%s engine, batch %s, %s: %s", e, l.label(), p, c.note))
				}
			}
			if len(plugins) == 2 {
				if row[0].err == nil && row[1].err == nil {
					fmt.Fprintf(&t, " %.2fx |", row[0].rate()/row[1].rate())
				} else {
					t.WriteString(" |")
				}
			}
			if withCeiling {
				if c := findCell(cells, e, l, ceiling); c.err == nil {
					fmt.Fprintf(&t, " %s |", thousands(c.rate()))
				} else {
					fmt.Fprintf(&t, " failed: %s |", oneLine(c.err))
				}
			}
			t.WriteString("\n")
		}
	}
	writeResourceTable(&t, cells, measured, engines, loads)
	if len(notes) > 0 {
		t.WriteString("\nAfter the window (not measured):\n\n")
		for _, n := range notes {
			t.WriteString("- " + n + "\n")
		}
	}
	return t.String()
}

func findCell(cells []*conduitCell, engine string, l load, plugin string) *conduitCell {
	for _, c := range cells {
		if c.engine == engine && c.load == l && c.plugin.name == plugin {
			return c
		}
	}
	return &conduitCell{err: errors.New("not run")}
}

// conduitChart draws rows per second and mean latency by batch size side
// by side, as the published experiment does: a colour per plugin, solid for
// the default engine and dashed for v2.
func conduitChart(cells []*conduitCell, plugins []string, engines []string, loads []load, delay time.Duration) string {
	loads = slices.DeleteFunc(slices.Clone(loads), func(l load) bool { return l.idle })
	var tp, lat []chart.Series
	for pi, p := range plugins {
		for ei, e := range engines {
			s := chart.Series{Label: p + ", " + e, Color: chart.Palette[pi%len(chart.Palette)], Dashed: ei == 1}
			l := s
			for _, ld := range loads {
				c := findCell(cells, e, ld, p)
				tv, lv := math.NaN(), math.NaN()
				if c.err == nil {
					tv, lv = c.rate(), c.hist.mean()*1000
				}
				s.Values = append(s.Values, tv)
				l.Values = append(l.Values, lv)
			}
			tp, lat = append(tp, s), append(lat, l)
		}
	}
	labels := make([]string, len(loads))
	for i, l := range loads {
		labels[i] = l.label()
	}
	x := fmt.Sprintf("sdk.batch.size (sdk.batch.delay %v)", delay)
	if len(loads) > 0 && loads[0].sourceRate > 0 {
		x += fmt.Sprintf(", the generator at %g records/s", loads[0].sourceRate)
	}
	return chart.Panels(
		chart.Line("Conduit → Postgres: rows per second", x, "rows/s", labels, tp, false),
		chart.Line("Conduit → Postgres: mean latency", x, "ms (log scale)", labels, lat, true),
	)
}
