package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/connkit/connkit/internal/conduit"
	"github.com/jackc/pgx/v5"
)

// latencyTable is the table the CDC pipelines of latencyMode stream.
const latencyTable = "latency_source"

// latencyCell is one pipeline of latencyMode: a source of a kind, made
// with an SDK, in an engine of a Conduit release.
type latencyCell struct {
	conduitCell
	release string // the Conduit binary's label
	kind    string // "generator" or "cdc"
}

// latencySources are the sources a kind of pipeline is measured with, in
// the order their cells alternate: connkit's plugin, the incumbent's, and
// Conduit's builtin generator (no plugin).
type latencySources struct {
	generator, vsGenerator, postgres, vsPostgres string
	builtin                                      bool
}

// of returns the sources of kind, each as a plugin named for its SDK.
func (s latencySources) of(kind string) []plugin {
	var out []plugin
	add := func(name, path string) {
		if path != "" {
			out = append(out, plugin{name: name, path: path})
		}
	}
	switch kind {
	case "generator":
		add("connkit", s.generator)
		add("incumbent", s.vsGenerator)
		if s.builtin {
			out = append(out, plugin{name: "builtin"})
		}
	case "cdc":
		add("connkit", s.postgres)
		add("incumbent", s.vsPostgres)
	}
	return out
}

// latencyMode measures what a source adds to a pipeline's latency below
// its capacity, in real Conduit, connkit's source beside the incumbent
// SDK's: a generator at -rate records/s, and Postgres changes at -cdc-rate
// rows/s, one row a transaction, each into connkit's log destination doing
// nothing, in each engine of each Conduit binary given. The latency is
// Conduit's own conduit_pipeline_execution_duration_seconds, from the
// source's read to the destination's ack, over a window after a warm-up.
func latencyMode(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("latency", flag.ExitOnError)
	var src latencySources
	fs.StringVar(&src.generator, "generator", "bin/connkit-generator", "connkit's generator plugin")
	fs.StringVar(&src.vsGenerator, "vs-generator", "", "the incumbent's generator plugin, measured side by side")
	fs.StringVar(&src.postgres, "postgres", "bin/connkit-postgres", "connkit's Postgres plugin")
	fs.StringVar(&src.vsPostgres, "vs-postgres", "", "the incumbent's Postgres plugin, measured side by side")
	fs.BoolVar(&src.builtin, "builtin", true, "measure Conduit's builtin generator too")
	vsFirst := fs.Bool("vs-first", false, "run the sources' cells of each engine in the reverse order, to alternate runs with and without")
	logPlugin := fs.String("log", "bin/connkit-log", "the destination: connkit's log plugin, at trace level")
	binaries := fs.String("conduit", defaultConduit(), "comma-separated Conduit binaries, each measured in every engine (default $CONDUIT_BIN, else the one `make conduit` builds)")
	enginesFlag := fs.String("engines", "default,v2", "comma-separated engines: default, v2 (--preview.pipeline-arch-v2)")
	kinds := fs.String("pipelines", "generator,cdc", "comma-separated pipelines: generator, cdc")
	rate := fs.Float64("rate", 1000, "records per second the generators make")
	cdcRate := fs.Float64("cdc-rate", 200, "rows per second inserted for the CDC pipelines, one a transaction")
	warmup := fs.Duration("warmup", 3*time.Second, "time after the first record that a cell leaves out of its measurement")
	duration := fs.Duration("duration", 10*time.Second, "measurement window of a cell")
	url := fs.String("url", "", "PostgreSQL URL for the CDC pipelines; empty starts a throwaway server from the machine's binaries")
	out := fs.String("out", "bench/results", "directory for latency.md")
	_ = fs.Parse(args)

	var cells []*latencyCell
	releases := map[string]string{} // label → binary
	var labels []string
	for bin := range strings.SplitSeq(*binaries, ",") {
		cf := conduitFlags{bin: bin, engines: *enginesFlag}
		engines, err := cf.check()
		if err != nil {
			return err
		}
		label := conduitRelease(bin)
		if _, ok := releases[label]; ok {
			return fmt.Errorf("-conduit: two binaries are %s", label)
		}
		releases[label] = bin
		labels = append(labels, label)
		for kind := range strings.SplitSeq(*kinds, ",") {
			if kind != "generator" && kind != "cdc" {
				return fmt.Errorf("-pipelines: got %q, expected generator or cdc", kind)
			}
			order := src.of(kind)
			if *vsFirst {
				slices.Reverse(order)
			}
			for _, e := range engines {
				for _, p := range order {
					cells = append(cells, &latencyCell{conduitCell: conduitCell{engine: e, plugin: p}, release: label, kind: kind})
				}
			}
		}
	}
	if *rate <= 0 || *cdcRate <= 0 {
		return errors.New("-rate and -cdc-rate: expected positive numbers")
	}

	var db *latencyDB
	if strings.Contains(*kinds, "cdc") {
		conn, closeDB, err := database(ctx, url, createTables(latencyTable))
		if err != nil {
			return err
		}
		defer closeDB()
		db = &latencyDB{conn: conn, url: *url}
		if db.pgServer, err = postmaster(ctx, conn); err != nil {
			return err
		}
	}

	start := time.Now()
	for i, c := range cells {
		fmt.Fprintf(os.Stderr, "\r\033[K[%d/%d %s] %s, %s engine, %s, %s source ...", i+1, len(cells), time.Since(start).Round(time.Second),
			c.release, c.engine, c.kind, c.plugin.name)
		c.run(ctx, releases[c.release], *logPlugin, db, i, *rate, *cdcRate, *warmup, *duration)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if c.err != nil {
			fmt.Fprintf(os.Stderr, "\n%s, %s engine, %s, %s: %v\n", c.release, c.engine, c.kind, c.plugin.name, c.err)
		}
	}
	fmt.Fprintf(os.Stderr, "\r\033[Kdone in %v\n", time.Since(start).Round(time.Second))
	table := latencyReport(cells, labels, *vsFirst, *rate, *cdcRate, *warmup, *duration)
	return publish(*out, table, map[string]string{"latency.md": table})
}

// latencyDB is the database of the CDC pipelines.
type latencyDB struct {
	conn     *pgx.Conn
	url      string
	pgServer int
	lastID   atomic.Int64 // the last row inserted, over every cell
}

// run measures the cell: its pipeline in Conduit bin, its source at rate
// (generator) or cdcRate (cdc, rows inserted by db meanwhile) into the
// log plugin; n makes its replication slot's name unique.
func (c *latencyCell) run(ctx context.Context, bin, logPlugin string, db *latencyDB, n int, rate, cdcRate float64, warmup, duration time.Duration) {
	plugins := []string{logPlugin}
	if c.plugin.path != "" {
		plugins = append(plugins, c.plugin.path)
	}
	destination := conduit.Component{ID: "log", Plugin: "standalone:log", Settings: map[string]string{"level": "trace"}}
	var source conduit.Component
	pgServer := 0
	switch c.kind {
	case "generator":
		source = conduit.Component{ID: "source", Plugin: "standalone:generator", Settings: map[string]string{
			"rate":              strconv.FormatFloat(rate, 'g', -1, 64),
			"format.type":       "structured",
			"format.options.id": "int", "format.options.name": "string",
		}}
		if c.plugin.name == "builtin" {
			source.Plugin = "builtin:generator"
		}
	case "cdc":
		name := fmt.Sprintf("bench_latency_%d", n)
		source = conduit.Component{ID: "source", Plugin: "standalone:postgres", Settings: cdcSource(c.plugin.name, db.url, name)}
		pgServer = db.pgServer
		stop := db.insert(ctx, cdcRate)
		defer func() {
			if err := stop(); err != nil && c.err == nil {
				c.err = fmt.Errorf("insert rows: %w", err)
			}
			if err := dropReplication(ctx, db.conn, name); err != nil && c.err == nil {
				c.err = err
			}
		}()
	}
	pipeline := conduit.Pipeline{ID: measuredPipeline, Source: source, Destination: destination}.File()
	c.runIn(ctx, bin, pipeline, plugins, pgServer, nil, warmup, duration, 0)
}

// cdcSource returns the settings of a Postgres source of sdk ("connkit"
// or "incumbent") that streams latencyTable's changes, without a snapshot,
// through the replication slot and publication name; its defaults
// otherwise.
func cdcSource(sdk, url, name string) map[string]string {
	d := dialects[sdk]
	s := map[string]string{"url": url, "tables": latencyTable, d.slot: name, d.publication: name}
	if sdk == "incumbent" {
		s["snapshotMode"], s["cdcMode"] = "never", "logrepl"
	} else {
		s["snapshot.mode"] = "never"
	}
	return s
}

// insert inserts a row a transaction into latencyTable, rate rows per
// second, until stop is called, which returns the first error.
func (db *latencyDB) insert(ctx context.Context, rate float64) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		conn, err := pgx.Connect(ctx, db.url)
		if err != nil {
			done <- err
			return
		}
		defer conn.Close(context.Background())
		tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				done <- nil
				return
			case <-tick.C:
			}
			id := db.lastID.Add(1)
			if _, err := conn.Exec(ctx, insertRows(latencyTable, id, id)); err != nil && ctx.Err() == nil {
				done <- err
				return
			}
		}
	}()
	return func() error { cancel(); return <-done }
}

// conduitRelease names a Conduit binary by the version it reports, or, for
// one built from source without a version, by its file name (conduit-v0.19.0
// is "Conduit v0.19.0").
func conduitRelease(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if v, _, _ := strings.Cut(strings.TrimSpace(string(out)), " "); err == nil && strings.HasPrefix(v, "v") {
		return "Conduit " + v
	}
	if v, ok := strings.CutPrefix(filepath.Base(bin), "conduit-"); ok {
		return "Conduit " + v
	}
	return filepath.Base(bin)
}

// latencyTarget is the most a connkit source may add over the incumbent's:
// 1.2 times its mean, or 0.2 ms above it, whichever is larger.
func latencyTarget(incumbent float64) float64 { return max(1.2*incumbent, incumbent+0.0002) }

func latencyReport(cells []*latencyCell, releases []string, vsFirst bool, rate, cdcRate float64, warmup, duration time.Duration) string {
	var t strings.Builder
	fmt.Fprintf(&t, "A source's latency below its capacity, in real Conduit: a generator making %g structured records/s (connkit's, the incumbent SDK's, Conduit's builtin) and Postgres changes at %g rows/s, one row a transaction (connkit's Postgres source, the incumbent's), each into connkit's log destination at trace level (it does nothing). Every plugin with its defaults and no batch settings. ", rate, cdcRate)
	order := "connkit's first"
	if vsFirst {
		order = "connkit's last"
	}
	fmt.Fprintf(&t, "One Conduit per cell, the sources alternating (%s); a cell measures %v after %v of warm-up, as the difference of two readings of Conduit's conduit_pipeline_execution_duration_seconds (from the source's read to the destination's ack): mean is its sum over its count. ", order, duration, warmup)
	t.WriteString("The target is connkit's mean at most 1.2 times the incumbent's, or 0.2 ms above it, whichever is larger. On a busy two-core machine, compare within a row. ")
	t.WriteString("Conduit measures from a record's opencdc.readAt, which the incumbent's generator and Conduit's builtin one leave empty: Conduit stamps their records as it receives them, so their figures leave out the plugin and the transport, which connkit's generator includes, stamping each record as its Read returns, as the incumbent SDK's record constructors, and so both Postgres sources, do.\n\n")
	writeTableHead(&t, "| pipeline | Conduit | engine | connkit records/s | connkit mean | incumbent mean | builtin mean | connkit − incumbent | within target |")
	for _, kind := range []string{"generator", "cdc"} {
		for _, r := range releases {
			for _, e := range []string{"default", "v2"} {
				row := func(name string) *latencyCell {
					for _, c := range cells {
						if c.kind == kind && c.release == r && c.engine == e && c.plugin.name == name {
							return c
						}
					}
					return nil
				}
				ours, theirs, builtin := row("connkit"), row("incumbent"), row("builtin")
				if ours == nil {
					continue
				}
				label := fmt.Sprintf("generator %g/s → log", rate)
				if kind == "cdc" {
					label = fmt.Sprintf("Postgres CDC %g rows/s → log", cdcRate)
				}
				fmt.Fprintf(&t, "| %s | %s | %s | %s | %s | %s | %s |", label, r, e, latencyRate(ours), latencyMean(ours), latencyMean(theirs), latencyMean(builtin))
				if ours.err == nil && theirs != nil && theirs.err == nil {
					a, b := ours.hist.mean(), theirs.hist.mean()
					verdict := "yes"
					if a > latencyTarget(b) {
						verdict = fmt.Sprintf("no (target %s)", millis(latencyTarget(b)))
					}
					fmt.Fprintf(&t, " %+.2f ms | %s |\n", (a-b)*1000, verdict)
				} else {
					t.WriteString(" | |\n")
				}
			}
		}
	}
	return t.String()
}

func latencyRate(c *latencyCell) string {
	if c == nil || c.err != nil {
		return ""
	}
	return thousands(c.rate())
}

func latencyMean(c *latencyCell) string {
	switch {
	case c == nil:
		return "–"
	case c.err != nil:
		return "failed: " + oneLine(c.err)
	case c.records == 0 || math.IsNaN(c.hist.mean()):
		return "no records"
	}
	return fmt.Sprintf("%.2f ms", c.hist.mean()*1000)
}
