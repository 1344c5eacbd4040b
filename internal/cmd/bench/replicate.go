package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/connkit/connkit/internal/conduit"
	"github.com/jackc/pgx/v5"
)

// replicatePipeline is a Postgres source → Postgres destination pipeline,
// both from one plugin binary, named postgres, with their settings.
func replicatePipeline(source, destination map[string]string) string {
	return conduit.Pipeline{
		ID:          "replicate",
		Source:      conduit.Component{ID: "source", Plugin: "standalone:postgres", Settings: source},
		Destination: conduit.Component{ID: "destination", Plugin: "standalone:postgres", Settings: destination},
	}.File()
}

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

// replicateCell is one pipeline in one engine: its snapshot and its
// changes, each a window.
type replicateCell struct {
	engine            string
	plugin            plugin
	snapshot, changes window
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
	var f pgFlags
	f.define(fs, "Postgres plugin named postgres, source and destination, configured as connkit's", "second Postgres plugin, configured as the incumbent's, measured side by side")
	f.defineDialects(fs, "how the first plugin is configured: connkit or incumbent", "how the second plugin is configured: connkit or incumbent")
	var cf conduitFlags
	cf.define(fs, "v2,default")
	snapshotRows := fs.Int64("snapshot", 100000, "rows in the table when the pipeline starts")
	changes := fs.Int64("changes", 50000, "rows inserted once the snapshot is through")
	txRows := fs.Int64("tx-rows", 1000, "rows per inserting transaction: enough to commit faster than a pipeline streams")
	out := fs.String("out", "bench/results", "directory for replicate.md")
	vsFirst := fs.Bool("vs-first", false, "run the second plugin's cell of each engine first, to alternate runs with and without")
	_ = fs.Parse(args)

	engines, err := cf.check()
	if err != nil {
		return err
	}
	if *snapshotRows < 1 || *changes < 1 || *txRows < 1 {
		return errors.New("-snapshot, -changes and -tx-rows: expected positive numbers")
	}
	// The pipeline copies replicate_source into replicate_copy.
	plugins, conn, closeDB, err := f.open(ctx, createTables("replicate_source", "replicate_copy"))
	if err != nil {
		return err
	}
	defer closeDB()
	if err := fillTable(ctx, conn, "replicate_source", *snapshotRows); err != nil {
		return err
	}
	pgServer, err := postmaster(ctx, conn)
	if err != nil {
		return err
	}

	var cells []*replicateCell
	order := plugins
	if *vsFirst {
		order = slices.Clone(plugins)
		slices.Reverse(order)
	}
	for _, e := range engines {
		for _, p := range order {
			cells = append(cells, &replicateCell{engine: e, plugin: p})
		}
	}
	start := time.Now()
	for i, c := range cells {
		fmt.Fprintf(os.Stderr, "\r\033[K[%d/%d %s] %s engine, %s ...", i+1, len(cells), time.Since(start).Round(time.Second), c.engine, c.plugin.name)
		if _, err := conn.Exec(ctx, fmt.Sprintf("TRUNCATE replicate_copy; DELETE FROM replicate_source WHERE id > %d", *snapshotRows)); err != nil {
			return err
		}
		// Every cell starts from the same table: no dead rows of the cell
		// before, and every row's hint bits set, as they would not be
		// right after the fill.
		if _, err := conn.Exec(ctx, "VACUUM (ANALYZE) replicate_source"); err != nil {
			return err
		}
		name := fmt.Sprintf("bench_replicate_%d", i)
		source := replicateSource(c.plugin.dialect, c.engine, f.url, name)
		pipeline := replicatePipeline(source, map[string]string{"url": f.url, "table": "replicate_copy"})
		conns, err := startCounting(ctx, conn)
		if err != nil {
			return err
		}
		c.run(ctx, cf.bin, pipeline, f.url, pgServer, conns, *snapshotRows, *changes, *txRows)
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
	table := replicateReport(conduitRelease(cf.bin), cells, names(plugins), engines, *snapshotRows, *changes, *txRows)
	return publish(*out, table, map[string]string{"replicate.md": table})
}

// run starts Conduit with the pipeline and the cell's plugin alone in its
// connectors directory. The snapshot is measured from the first record
// through the pipeline to the last of the table's; then changes rows are
// inserted, txRows per transaction, and the changes are measured from the
// first insert to the last row through the pipeline. At the end of each,
// conns counts the destination's connections.
func (c *replicateCell) run(ctx context.Context, bin, pipeline, url string, pgServer int, conns *connCounter, snapshotRows, changes, txRows int64) {
	s, dir, stop, err := startConduit(bin, c.engine, pipeline, []string{c.plugin.path})
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
	sampling := startSampling(100*time.Millisecond, cellGroups(s, dir, pgServer)...)
	t0 := time.Now()
	if err := until(snapshotRows, 10*time.Minute); err != nil {
		sampling.finish()
		c.err = fmt.Errorf("snapshot: %w", err)
		return
	}
	if err := c.snapshot.measure(s, "replicate", histogram{}, t0, sampling); err != nil {
		c.err = fmt.Errorf("snapshot: %w", err)
		return
	}
	if c.snapshot.conns, err = conns.count(ctx); err != nil {
		c.err = fmt.Errorf("snapshot: count the destination's connections: %w", err)
		return
	}
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
	sampling = startSampling(100*time.Millisecond, cellGroups(s, dir, pgServer)...)
	t0 = time.Now()
	loaded := make(chan error, 1)
	go func() {
		for first := snapshotRows + 1; first <= snapshotRows+changes; first += txRows {
			last := min(first+txRows-1, snapshotRows+changes)
			if _, err := loader.Exec(ctx, insertRows("replicate_source", first, last)); err != nil {
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
	if err := c.changes.measure(s, "replicate", before, t0, sampling); err != nil {
		c.err = fmt.Errorf("changes: %w", err)
		return
	}
	if c.changes.conns, err = conns.count(ctx); err != nil {
		c.err = fmt.Errorf("changes: count the destination's connections: %w", err)
		return
	}
	if err := s.Stop(15 * time.Second); err != nil {
		c.note = "stop: " + oneLine(err)
	}
}

func replicateReport(release string, cells []*replicateCell, plugins []string, engines []string, snapshotRows, changes, txRows int64) string {
	var t strings.Builder
	fmt.Fprintf(&t, "Real %s: standalone Postgres source → standalone Postgres destination, one plugin binary for both, each with its defaults and no batch settings (but the incumbent's source, which needs some: snapshot.fetchSize 2000, since with its own, 50000, it sends messages over gRPC's 4 MiB limit, and with 10000 its destination does, acking a snapshot batch in the v2 engine; and in the v2 engine sdk.batch.size 4000 with sdk.batch.delay 10ms, since with no batch settings it sends batches of 20000 records there, whose acks its destination sends in one message over the limit). ", release)
	fmt.Fprintf(&t, "The table %s holds %d rows when the pipeline starts; the snapshot is measured from the first record through the pipeline to the last. Then %d rows are inserted, %d per transaction, back to back from one connection, and the changes are measured from the first insert until the last row is through. ", rowColumns, snapshotRows, changes, txRows)
	var order []string
	for _, c := range cells[:len(plugins)] {
		order = append(order, c.plugin.name)
	}
	fmt.Fprintf(&t, "Latency is Conduit's conduit_pipeline_execution_duration_seconds (from the source's read to the destination's ack) over the phase, its percentiles estimated from the buckets as Prometheus's histogram_quantile does. One Conduit per cell, the plugins alternating (in the order %s); on a busy two-core machine the ratio of a row says more than its absolute figures.\n\n", strings.Join(order, ", "))
	writeTableHead(&t, "| engine | phase |"+pluginColumns(plugins, " %[1]s rows/s | %[1]s p50 | %[1]s p99 |", " rows/s ratio | p50 ratio |"))
	phases := []struct {
		name string
		of   func(*replicateCell) window
	}{
		{"snapshot", func(c *replicateCell) window { return c.snapshot }},
		{"changes", func(c *replicateCell) window { return c.changes }},
	}
	var notes []string
	for _, e := range engines {
		for _, ph := range phases {
			fmt.Fprintf(&t, "| %s | %s |", e, ph.name)
			row := make([]*replicateCell, len(plugins))
			for i, p := range plugins {
				row[i] = findReplicateCell(cells, e, p)
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
					notes = append(notes, fmt.Sprintf("%s engine, %s: %s", e, p, c.note))
				}
			}
			if len(plugins) == 2 {
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

	t.WriteString("\nWhat the processes used in the same phases, read from /proc: CPU is user and system time per row (both plugin processes together; PostgreSQL's postmaster and every backend, the inserting one included); peak RSS is the largest resident set sampled every 100 ms. " + destinationConnsNote + "\n\n")
	writeResourceHead(&t, "phase", "plugins")
	for _, e := range engines {
		for _, ph := range phases {
			for _, p := range plugins {
				c := findReplicateCell(cells, e, p)
				writeResourceRow(&t, e, ph.name, p, ph.of(c), c.err)
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
