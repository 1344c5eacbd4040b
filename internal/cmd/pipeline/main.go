// Command pipeline runs the reference pipeline in real Conduit: Conduit's
// builtin generator, a processor that makes each record's id its key, and
// connkit's Postgres destination (standalone:postgres) writing into a
// throwaway PostgreSQL server. It prints what arrived (rows, rows/s, the
// mean latency from Conduit's metrics, a few rows) and cleans up: Conduit is
// stopped with SIGINT, PostgreSQL stopped, temporary directories removed,
// also when it is interrupted.
//
//	pipeline -records 5000 -conduit ~/.cache/connkit/conduit-v0.14.0 -plugin bin/connkit-postgres
//
// The pipeline file is pipeline.yaml next to this file; -print prints it.
// With -metrics ADDRESS the destination serves its metrics there
// (sdk.metrics.address), and the command says where and what they said
// once every record arrived.
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/connkit/connkit/internal/conduit"
	"github.com/connkit/connkit/internal/metrics"
	"github.com/connkit/connkit/internal/metrics/metricstest"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// pipelineFile is what Conduit runs; it names the settings below as
// ${NAME}, which Conduit takes from its environment.
//
//go:embed pipeline.yaml
var pipelineFile string

const (
	pipelineID = "generator-to-postgres"
	table      = "generated"
	ddl        = `CREATE TABLE generated (id bigint PRIMARY KEY, name text, at timestamptz, arrived timestamptz NOT NULL DEFAULT clock_timestamp())`
)

type config struct {
	conduit, plugin string
	records         int
	batchSize       int
	batchDelay      time.Duration
	metrics         string // the destination's sdk.metrics.address; empty: none
	show            int
	timeout         time.Duration
	print           bool
}

// flags defines the command's flags on fs, which fill cfg.
func flags(fs *flag.FlagSet, cfg *config) {
	fs.StringVar(&cfg.conduit, "conduit", defaultConduit(), "Conduit binary (`make conduit` builds it)")
	fs.StringVar(&cfg.plugin, "plugin", "bin/connkit-postgres", "connkit's Postgres plugin binary (`make build` builds it)")
	fs.IntVar(&cfg.records, "records", 5000, "records the generator makes")
	fs.IntVar(&cfg.batchSize, "batch-size", 0, "the destination's sdk.batch.size (0, the default: batches size themselves)")
	fs.DurationVar(&cfg.batchDelay, "batch-delay", 0, "the destination's sdk.batch.delay (0, the default: a batch never waits)")
	fs.StringVar(&cfg.metrics, "metrics", "", "serve the destination's metrics at `host:port`, such as 127.0.0.1:9464 (its sdk.metrics.address); empty: not served")
	fs.IntVar(&cfg.show, "show", 5, "rows of the table to print")
	fs.DurationVar(&cfg.timeout, "timeout", 2*time.Minute, "give up if the records have not all arrived by then")
	fs.BoolVar(&cfg.print, "print", false, "print the pipeline file and exit")
}

// check reports a flag whose value the command cannot run with.
func (cfg config) check() error {
	if cfg.records < 1 {
		return errors.New("-records must be at least 1")
	}
	if cfg.metrics != "" {
		if err := metrics.CheckAddress(cfg.metrics); err != nil {
			return fmt.Errorf("-metrics %q: expected %v", cfg.metrics, err)
		}
		if _, port, _ := net.SplitHostPort(cfg.metrics); port == "0" {
			return fmt.Errorf("-metrics %q: expected a port other than 0, so that the command can say where to scrape", cfg.metrics)
		}
	}
	return nil
}

func main() {
	var cfg config
	flags(flag.CommandLine, &cfg)
	flag.Parse()
	if cfg.print {
		fmt.Print(pipelineFile)
		return
	}
	if err := cfg.check(); err != nil {
		fmt.Fprintln(os.Stderr, "pipeline:", err)
		os.Exit(2)
	}

	// The first interrupt cancels the run, which then cleans up; later
	// ones are ignored, so that a second Ctrl-C cannot leave PostgreSQL
	// running. Cleanup is bounded (Conduit gets 20s to stop).
	ctx, cancel := context.WithCancelCause(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-signals
		fmt.Fprintf(os.Stderr, "\n%v: stopping and cleaning up…\n", sig)
		cancel(errInterrupted)
		for range signals {
			fmt.Fprintln(os.Stderr, "still cleaning up…")
		}
	}()
	err := run(ctx, cfg, os.Stdout)
	switch {
	case errors.Is(context.Cause(ctx), errInterrupted):
		os.Exit(130)
	case err != nil:
		fmt.Fprintln(os.Stderr, "pipeline:", err)
		os.Exit(1)
	}
	fmt.Println("\nConduit and PostgreSQL stopped, temporary files removed.")
}

var errInterrupted = errors.New("interrupted")

// defaultConduit is CONDUIT_BIN, else where the Makefile builds Conduit.
func defaultConduit() string {
	if bin := os.Getenv("CONDUIT_BIN"); bin != "" {
		return bin
	}
	cache, err := os.UserCacheDir()
	if dir := os.Getenv("XDG_CACHE_HOME"); dir != "" || err != nil {
		cache = dir
	}
	return filepath.Join(cache, "connkit", "conduit-v0.14.0")
}

func run(ctx context.Context, cfg config, out io.Writer) (err error) {
	for _, bin := range []struct{ what, path, make string }{{"Conduit", cfg.conduit, "conduit"}, {"the Postgres plugin", cfg.plugin, "build"}} {
		if _, err := os.Stat(bin.path); err != nil {
			return fmt.Errorf("no %s at %s (`make %s` builds it): %w", bin.what, bin.path, bin.make, err)
		}
	}

	fmt.Fprintln(out, "starting a throwaway PostgreSQL server…")
	pg, err := pgtest.Start()
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := pg.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping PostgreSQL: %w", stopErr))
		}
	}()
	if err := ctx.Err(); err != nil {
		return err
	}
	url, err := pg.CreateDatabase(ctx, "pipeline")
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, ddl); err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "connkit-pipeline-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintf(out, "starting Conduit (%s): builtin:generator → field.set (id as key) → standalone:postgres, %d records…\n", cfg.conduit, cfg.records)
	c, err := conduit.Start(conduit.Options{
		Bin:      cfg.conduit,
		Dir:      dir,
		Pipeline: pipelineFile,
		Plugins:  []string{cfg.plugin},
		Env: []string{
			"RECORDS=" + strconv.Itoa(cfg.records),
			"POSTGRES_URL=" + url,
			"BATCH_SIZE=" + strconv.Itoa(cfg.batchSize),
			"BATCH_DELAY=" + cfg.batchDelay.String(),
			"METRICS_ADDRESS=" + cfg.metrics,
		},
	})
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			if stopErr := c.Stop(20 * time.Second); stopErr != nil {
				err = errors.Join(err, fmt.Errorf("stopping Conduit: %w", stopErr))
			}
		}
		if err != nil && !errors.Is(context.Cause(ctx), errInterrupted) {
			err = fmt.Errorf("%w\nConduit's warnings and errors:\n%s", err, strings.Join(c.Problems(), "\n"))
		}
	}()

	waitCtx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	if err := waitRunning(waitCtx, c); err != nil {
		return err
	}
	fmt.Fprintf(out, "pipeline %s running; waiting for %d records…\n", pipelineID, cfg.records)
	if cfg.metrics != "" {
		fmt.Fprintf(out, "the destination serves its metrics while Conduit runs: curl -s http://%s/metrics\n", cfg.metrics)
	}
	if err := c.WaitAcked(waitCtx, pipelineID, cfg.records); err != nil {
		return err
	}
	count, sum := c.Latency(pipelineID)
	if cfg.metrics != "" {
		if err := reportMetrics(out, cfg.metrics); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "stopping Conduit…")
	stopped = true
	if err := c.Stop(20 * time.Second); err != nil {
		return fmt.Errorf("stopping Conduit: %w", err)
	}
	return report(ctx, out, conn, count, sum, cfg.show)
}

// waitRunning waits until Conduit's API reports the pipeline running.
func waitRunning(ctx context.Context, c *conduit.Server) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		status, errText := c.PipelineState(pipelineID)
		switch status {
		case "STATUS_RUNNING", "STATUS_RECOVERING", "STATUS_STOPPED":
			return nil
		case "STATUS_DEGRADED":
			return fmt.Errorf("%w: %s", conduit.ErrDegraded, errText)
		}
		select {
		case <-c.Done():
			return fmt.Errorf("conduit exited (%v) before pipeline %s ran; last status: %s", c.Err(), pipelineID, status)
		case <-ctx.Done():
			return fmt.Errorf("waiting for pipeline %s to run: %w; last status: %s", pipelineID, context.Cause(ctx), status)
		case <-tick.C:
		}
	}
}

// reportMetrics prints what the destination's metrics, served at
// address, say of the run.
func reportMetrics(out io.Writer, address string) error {
	samples, err := metricstest.Scrape(address)
	if err != nil {
		return fmt.Errorf("scrape the destination's metrics: %w", err)
	}
	sum := func(name string) float64 { v, _ := samples.Sum(name); return v }
	fmt.Fprintf(out, "the destination's metrics at http://%s/metrics: %.0f records in, %.0f acked, in %.0f batches (%.1f records each), a Write taking %.1f ms\n",
		address, sum("connkit_records_in_total"), sum("connkit_records_acked_total"), sum("connkit_batch_records_count"),
		sum("connkit_batch_records_sum")/sum("connkit_batch_records_count"), sum("connkit_write_seconds_sum")/sum("connkit_write_seconds_count")*1000)
	return nil
}

// report prints what arrived in the table, and the latency Conduit
// measured for count records, sum seconds in all.
func report(ctx context.Context, out io.Writer, conn *pgx.Conn, count, sum float64, show int) error {
	var rows int64
	var first, last time.Time
	// at is when the generator made the record (its field of type time),
	// arrived when the row was inserted: the same machine's clock.
	err := conn.QueryRow(ctx, `SELECT count(*), min(at), max(arrived) FROM `+table).Scan(&rows, &first, &last)
	if err != nil {
		return err
	}
	span := last.Sub(first)
	fmt.Fprintf(out, "\n%d records acked by Conduit; %d rows arrived in table %s\n", int64(count), rows, table)
	fmt.Fprintf(out, "rows/s:       %.0f (%d rows in %v, from the first record's generation to the last row's insert)\n",
		float64(rows)/span.Seconds(), rows, span.Round(time.Millisecond))
	fmt.Fprintf(out, "mean latency: %.1f ms (Conduit's conduit_pipeline_execution_duration_seconds: sum %.3fs / count %d)\n",
		sum/count*1000, sum, int64(count))
	if show <= 0 {
		return nil
	}
	fmt.Fprintf(out, "\nthe first %d rows:\n", min(int64(show), rows))
	sample, err := conn.Query(ctx, `SELECT id, name, at, arrived FROM `+table+` ORDER BY arrived, id LIMIT $1`, show)
	if err != nil {
		return err
	}
	defer sample.Close()
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "id\tname\tat\tarrived")
	for sample.Next() {
		var id int64
		var name string
		var at, arrived time.Time
		if err := sample.Scan(&id, &name, &at, &arrived); err != nil {
			return err
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\n", id, name, at.UTC().Format("2006-01-02T15:04:05.000000Z"), arrived.UTC().Format("15:04:05.000000"))
	}
	if err := sample.Err(); err != nil {
		return err
	}
	return w.Flush()
}
