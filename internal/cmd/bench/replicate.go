package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The replicate mode's tables: the pipeline copies replicate_source into
// replicate_copy.
const replicateTables = `
	CREATE TABLE IF NOT EXISTS replicate_source (id bigint PRIMARY KEY, a text, b text, n int);
	CREATE TABLE IF NOT EXISTS replicate_copy (id bigint PRIMARY KEY, a text, b text, n int)`

// replicatePipeline is a Postgres source → Postgres destination pipeline,
// both from one plugin binary, named postgres: %[1]s and %[2]s are their
// settings.
const replicatePipeline = `version: "2.2"
pipelines:
  - id: replicate
    status: running
    connectors:
      - id: source
        type: source
        plugin: standalone:postgres
        settings:
%[1]s      - id: destination
        type: destination
        plugin: standalone:postgres
        settings:
%[2]s`

// replicateSource returns the settings of a Postgres source in dialect d
// (see dialects) that reads replicate_source through the replication slot
// and publication name, in engine: its defaults otherwise, and no batch
// settings where it can do without.
func replicateSource(d, engine, url, name string) map[string]string {
	s := map[string]string{"url": url, "tables": "replicate_source", dialects[d].slot: name, dialects[d].publication: name}
	if d != "incumbent" {
		return s
	}
	s["cdcMode"] = "logrepl"
	// Its snapshot reads 50000 rows per query by default and sends them to
	// Conduit in one message, over gRPC's 4 MiB limit for these rows; at
	// 10000, in the v2 engine, its destination acks a snapshot batch in one
	// message over the limit. 2000 works in both engines.
	s["snapshot.fetchSize"] = "2000"
	if engine == "v2" {
		// With no batch settings it sends the snapshot in batches of 20000
		// records, which its destination acks in one message over the
		// limit, and the pipeline fails. A batch delay is needed with a
		// size, or the last changes wait for a batch that never fills.
		s["sdk.batch.size"], s["sdk.batch.delay"] = "4000", "10ms"
	}
	return s
}

// phase is what a pipeline did in one part of its run: the snapshot, or the
// changes streamed after it.
type phase struct {
	records, elapsed float64 // records through the pipeline, and its seconds
	hist             histogram
	// What Conduit, the two plugins and PostgreSQL used meanwhile.
	conduitUse, pluginUse, postgresUse resourceUse
}

func (p phase) rate() float64 { return p.records / p.elapsed }

// replicateCell is one pipeline in one engine: its snapshot and its changes.
type replicateCell struct {
	engine            string
	plugin            pair
	snapshot, changes phase
	offered           float64 // rows per second the changes were committed at
	note              string  // what went wrong after the measurement, if anything
	err               error
}

// replicateMode measures Postgres → Postgres pipelines in real Conduit with
// no batch settings, one plugin binary for both ends, for one or two
// plugins side by side in each engine: the snapshot of a table, and then
// changes committed as fast as one connection can while the pipeline
// streams them. It reports rows per second and latency from Conduit's own
// metrics, and what each process used.
func replicateMode(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("replicate", flag.ExitOnError)
	a, b := pair{}, pair{}
	bin := fs.String("conduit", defaultConduit(), "Conduit binary (default $CONDUIT_BIN, else the one `make conduit` builds)")
	fs.StringVar(&a.destination, "plugin", "bin/connkit-postgres", "Postgres plugin named postgres, source and destination, configured as connkit's")
	fs.StringVar(&a.name, "name", "connkit", "name of the plugin")
	fs.StringVar(&b.destination, "vs-plugin", "", "second Postgres plugin, configured as the incumbent's, measured side by side")
	fs.StringVar(&b.name, "vs-name", "incumbent", "name of the second plugin")
	dialect := fs.String("dialect", "connkit", "how the first plugin is configured: connkit or incumbent")
	vsDialect := fs.String("vs-dialect", "incumbent", "how the second plugin is configured: connkit or incumbent")
	url := fs.String("url", "", "PostgreSQL URL; empty starts a throwaway server from the machine's binaries")
	engines := fs.String("engines", "v2,default", "comma-separated engines: default, v2 (--preview.pipeline-arch-v2)")
	snapshotRows := fs.Int64("snapshot", 100000, "rows in the table when the pipeline starts")
	changes := fs.Int64("changes", 50000, "rows inserted once the snapshot is through")
	txRows := fs.Int64("tx-rows", 1000, "rows per inserting transaction: enough to commit faster than a pipeline streams")
	out := fs.String("out", "bench/results", "directory for replicate.md")
	_ = fs.Parse(args)

	engineList := strings.Split(*engines, ",")
	for _, e := range engineList {
		if e != "default" && e != "v2" {
			return fmt.Errorf("-engines: got %q, expected default or v2", e)
		}
	}
	if *snapshotRows < 1 || *changes < 1 || *txRows < 1 {
		return errors.New("-snapshot, -changes and -tx-rows: expected positive numbers")
	}
	if _, err := os.Stat(*bin); err != nil {
		return fmt.Errorf("-conduit: %w (make conduit builds it)", err)
	}
	pairs := []pair{a}
	if b.destination != "" {
		pairs = append(pairs, b)
	}
	dialectOf := map[string]string{a.name: *dialect, b.name: *vsDialect}
	for _, d := range []string{*dialect, *vsDialect} {
		if _, ok := dialects[d]; !ok {
			return fmt.Errorf("-dialect, -vs-dialect: got %q, expected connkit or incumbent", d)
		}
	}
	if len(pairs) == 2 && a.name == b.name {
		return errors.New("-name and -vs-name: expected two names")
	}
	conn, closeDB, err := database(ctx, url, replicateTables)
	if err != nil {
		return err
	}
	defer closeDB()
	for _, sql := range []string{`TRUNCATE replicate_source`, `INSERT INTO replicate_source ` + fmt.Sprintf(pgsourceRows, 1, *snapshotRows), `VACUUM ANALYZE replicate_source`} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return err
		}
	}
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return err
	}
	pgServer := postmaster(backend)

	var cells []*replicateCell
	for _, e := range engineList {
		for _, p := range pairs {
			cells = append(cells, &replicateCell{engine: e, plugin: p})
		}
	}
	start := time.Now()
	for i, c := range cells {
		fmt.Fprintf(os.Stderr, "\r\033[K[%d/%d %s] %s engine, %s ...", i+1, len(cells), time.Since(start).Round(time.Second), c.engine, c.plugin.name)
		if _, err := conn.Exec(ctx, fmt.Sprintf("TRUNCATE replicate_copy; DELETE FROM replicate_source WHERE id > %d", *snapshotRows)); err != nil {
			return err
		}
		name := fmt.Sprintf("bench_replicate_%d", i)
		source := replicateSource(dialectOf[c.plugin.name], c.engine, *url, name)
		destination := map[string]string{"url": *url, "table": "replicate_copy"}
		pipeline := fmt.Sprintf(replicatePipeline, yamlSettings(source), yamlSettings(destination))
		c.run(ctx, *bin, pipeline, *url, pgServer, *snapshotRows, *changes, *txRows)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if c.err != nil {
			fmt.Fprintf(os.Stderr, "\n%s engine, %s: %v\n", c.engine, c.plugin.name, c.err)
		}
		if err := dropReplication(ctx, conn, name); err != nil {
			return err
		}
		var rows int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM replicate_copy").Scan(&rows); err != nil {
			return err
		}
		if c.err == nil && rows != *snapshotRows+*changes {
			c.err = fmt.Errorf("%d rows in replicate_copy, expected %d", rows, *snapshotRows+*changes)
		}
	}
	fmt.Fprintf(os.Stderr, "\r\033[Kdone in %v\n", time.Since(start).Round(time.Second))
	table := replicateReport(cells, pairs, engineList, *snapshotRows, *changes, *txRows)
	return publish(*out, table, map[string]string{"replicate.md": table})
}

// yamlSettings formats settings as a pipeline file's connector settings,
// sorted by name.
func yamlSettings(settings map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		fmt.Fprintf(&b, "          %s: %q\n", k, settings[k])
	}
	return b.String()
}

// run starts Conduit with the pipeline and the cell's plugin alone in its
// connectors directory. The snapshot is measured from the first record
// through the pipeline to the last of the table's; then changes rows are
// inserted, txRows per transaction, and the changes are measured from the
// first insert to the last row through the pipeline.
func (c *replicateCell) run(ctx context.Context, bin, pipeline, url string, pgServer int, snapshotRows, changes, txRows int64) {
	s, dir, stop, err := startConduit(bin, c.engine, pipeline, c.plugin.destination)
	if err != nil {
		c.err = err
		return
	}
	defer stop()
	defer func() {
		// A failed cell says what Conduit logged of it.
		if c.err != nil {
			if problems := s.Problems(); len(problems) > 0 {
				c.err = fmt.Errorf("%w; Conduit logged: %s", c.err, problems[0])
			}
		}
	}()
	groups := func() []processGroup {
		postgres := processes()
		if pgServer != 0 {
			postgres = processTree(pgServer)
		}
		return []processGroup{processes(s.Pid()), processes(pluginPids(dir)...), postgres}
	}

	// The snapshot: from the first record through to the table's last.
	until := func(n int64, limit time.Duration) error {
		wctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		return s.WaitAcked(wctx, "replicate", int(n))
	}
	if err := until(1, time.Minute); err != nil {
		c.err = err
		return
	}
	sampling := startSampling(100*time.Millisecond, groups()...)
	t0 := time.Now()
	if err := until(snapshotRows, 10*time.Minute); err != nil {
		sampling.finish()
		c.err = fmt.Errorf("snapshot: %w", err)
		return
	}
	c.snapshot.measure(s.URL, histogram{}, t0, sampling)
	if c.snapshot.records != float64(snapshotRows) {
		// A record counted twice, or a change before any was made.
		c.err = fmt.Errorf("snapshot: %v records through the pipeline, expected %d", c.snapshot.records, snapshotRows)
		return
	}

	// The changes: committed as fast as one connection can, while the
	// pipeline streams them.
	before, _, err := readHistogram(s.URL, "replicate")
	if err != nil {
		c.err = err
		return
	}
	loader, err := pgx.Connect(ctx, url)
	if err != nil {
		c.err = err
		return
	}
	defer loader.Close(context.Background())
	sampling = startSampling(100*time.Millisecond, groups()...)
	t0 = time.Now()
	loaded := make(chan error, 1)
	go func() {
		for first := snapshotRows + 1; first <= snapshotRows+changes; first += txRows {
			last := min(first+txRows-1, snapshotRows+changes)
			if _, err := loader.Exec(ctx, `INSERT INTO replicate_source `+fmt.Sprintf(pgsourceRows, first, last)); err != nil {
				loaded <- err
				return
			}
		}
		c.offered = float64(changes) / time.Since(t0).Seconds()
		loaded <- nil
	}()
	err = until(snapshotRows+changes, 10*time.Minute)
	if lerr := <-loaded; lerr != nil {
		err = errors.Join(err, fmt.Errorf("insert the changes: %w", lerr))
	}
	if err != nil {
		sampling.finish()
		c.err = fmt.Errorf("changes: %w", err)
		return
	}
	c.changes.measure(s.URL, before, t0, sampling)
	if err := s.Stop(15 * time.Second); err != nil {
		c.note = "stop: " + oneLine(err)
	}
}

// measure ends a phase begun at t0 with the histogram reading before.
func (p *phase) measure(baseURL string, before histogram, t0 time.Time, sampling *sampling) {
	after, t1, err := readHistogram(baseURL, "replicate")
	used := sampling.finish()
	p.conduitUse, p.pluginUse, p.postgresUse = used[0], used[1], used[2]
	if err != nil {
		return
	}
	if before.bounds == nil {
		before = histogram{bounds: after.bounds, cumulative: make([]float64, len(after.cumulative))}
	}
	p.hist = after.minus(before)
	p.records, p.elapsed = p.hist.count, t1.Sub(t0).Seconds()
}

func replicateReport(cells []*replicateCell, pairs []pair, engines []string, snapshotRows, changes, txRows int64) string {
	var t strings.Builder
	fmt.Fprintf(&t, "Real Conduit v0.14.0: standalone Postgres source → standalone Postgres destination, one plugin binary for both, each with its defaults and no batch settings (but the incumbent's source, which needs some: snapshot.fetchSize 2000, since with its own, 50000, it sends messages over gRPC's 4 MiB limit, and with 10000 its destination does, acking a snapshot batch in the v2 engine; and in the v2 engine sdk.batch.size 4000 with sdk.batch.delay 10ms, since with no batch settings it sends batches of 20000 records there, whose acks its destination sends in one message over the limit). ")
	fmt.Fprintf(&t, "The table (id bigint PRIMARY KEY, a text, b text, n int) holds %d rows when the pipeline starts; the snapshot is measured from the first record through the pipeline to the last. Then %d rows are inserted, %d per transaction, back to back from one connection, and the changes are measured from the first insert until the last row is through. ", snapshotRows, changes, txRows)
	t.WriteString("Latency is Conduit's conduit_pipeline_execution_duration_seconds (from the source's read to the destination's ack) over the phase, its percentiles estimated from the buckets as Prometheus's histogram_quantile does. One Conduit per cell, the plugins alternating; on a busy two-core machine the ratio of a row says more than its absolute figures.\n\n")
	t.WriteString("| engine | phase |")
	for _, p := range pairs {
		fmt.Fprintf(&t, " %[1]s rows/s | %[1]s p50 | %[1]s p99 |", p.name)
	}
	cols := 2 + 3*len(pairs)
	if len(pairs) == 2 {
		t.WriteString(" rows/s ratio | p50 ratio |")
		cols += 2
	}
	t.WriteString("\n|" + strings.Repeat("---|", cols) + "\n")
	phases := []struct {
		name string
		of   func(*replicateCell) phase
	}{
		{"snapshot", func(c *replicateCell) phase { return c.snapshot }},
		{"changes", func(c *replicateCell) phase { return c.changes }},
	}
	var notes []string
	for _, e := range engines {
		for _, ph := range phases {
			fmt.Fprintf(&t, "| %s | %s |", e, ph.name)
			row := make([]*replicateCell, len(pairs))
			for i, p := range pairs {
				row[i] = findReplicateCell(cells, e, p.name)
				c := row[i]
				if c.err != nil {
					fmt.Fprintf(&t, " failed: %s | | |", oneLine(c.err))
					continue
				}
				p50, _ := ph.of(c).hist.quantile(0.5)
				p99, above := ph.of(c).hist.quantile(0.99)
				gt := ""
				if above {
					gt = "> "
				}
				fmt.Fprintf(&t, " %s | %s | %s%s |", thousands(ph.of(c).rate()), millis(p50), gt, millis(p99))
				if c.note != "" && ph.name == "snapshot" {
					notes = append(notes, fmt.Sprintf("%s engine, %s: %s", e, p.name, c.note))
				}
			}
			if len(pairs) == 2 {
				if row[0].err == nil && row[1].err == nil {
					a, b := ph.of(row[0]), ph.of(row[1])
					pa, _ := a.hist.quantile(0.5)
					pb, _ := b.hist.quantile(0.5)
					fmt.Fprintf(&t, " %.2fx | %.2fx |", a.rate()/b.rate(), pa/pb)
				} else {
					t.WriteString(" | |")
				}
			}
			t.WriteString("\n")
		}
	}
	t.WriteString("\nThe changes were committed at (rows/s): ")
	var offered []string
	for _, c := range cells {
		if c.err == nil {
			offered = append(offered, fmt.Sprintf("%s %s %s", c.engine, c.plugin.name, thousands(c.offered)))
		}
	}
	t.WriteString(strings.Join(offered, "; ") + ".\n")

	t.WriteString("\nWhat the processes used in the same phases, read from /proc: CPU is user and system time per row (both plugin processes together; PostgreSQL's postmaster and every backend, the inserting one included); peak RSS is the largest resident set sampled every 100 ms.\n\n")
	t.WriteString("| engine | phase | pipeline | rows/s | Conduit CPU | plugins CPU | PostgreSQL CPU | Conduit peak RSS | plugins peak RSS | PostgreSQL peak RSS |\n")
	t.WriteString("|" + strings.Repeat("---|", 10) + "\n")
	for _, e := range engines {
		for _, ph := range phases {
			for _, p := range pairs {
				c := findReplicateCell(cells, e, p.name)
				if c.err != nil {
					fmt.Fprintf(&t, "| %s | %s | %s | failed | | | | | | |\n", e, ph.name, p.name)
					continue
				}
				x := ph.of(c)
				fmt.Fprintf(&t, "| %s | %s | %s | %s |%s\n", e, ph.name, p.name, thousands(x.rate()), resourceColumns(x.records, x.conduitUse, x.pluginUse, x.postgresUse))
			}
		}
	}
	if len(notes) > 0 {
		t.WriteString("\nAfter the measurement:\n\n")
		for _, n := range notes {
			t.WriteString("- " + n + "\n")
		}
	}
	return t.String()
}

func findReplicateCell(cells []*replicateCell, engine, plugin string) *replicateCell {
	for _, c := range cells {
		if c.engine == engine && c.plugin.name == plugin {
			return c
		}
	}
	return &replicateCell{err: errors.New("not run")}
}
