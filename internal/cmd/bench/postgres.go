package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/connkit/connkit/internal/chart"
	"github.com/connkit/connkit/internal/host"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// benchTable is the table the postgres mode writes: a bigint key, two text
// columns and an int.
const benchTable = `CREATE TABLE IF NOT EXISTS bench (id bigint PRIMARY KEY, a text, b text, n int)`

// postgresMode measures Postgres destinations: rows per second into
// benchTable, one record per message as Conduit's default engine sends them,
// with sdk.batch.size set to each batch size, for one or two plugins side by
// side. Each run starts from an empty table and ends by counting its rows.
func postgresMode(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("postgres", flag.ExitOnError)
	a := pair{sourceCfg: host.Settings{}, destCfg: host.Settings{}}
	b := pair{sourceCfg: host.Settings{}, destCfg: host.Settings{}}
	fs.StringVar(&a.name, "name", "connkit", "name of the plugin")
	fs.StringVar(&a.destination, "plugin", "bin/connkit-postgres", "destination plugin")
	fs.Var(a.destCfg, "config", "extra parameter as key=value (repeatable)")
	fs.StringVar(&b.name, "vs-name", "incumbent", "name of the second plugin")
	fs.StringVar(&b.destination, "vs-plugin", "", "second destination plugin, measured side by side")
	fs.Var(b.destCfg, "vs-config", "second plugin's extra parameter (repeatable)")
	url := fs.String("url", "", "PostgreSQL URL; empty starts a throwaway server from the machine's binaries")
	batches := fs.String("batch-sizes", "1,10,100,1000,10000", "comma-separated batch sizes")
	records := fs.Int64("records", 50000, "rows per run")
	out := fs.String("out", "bench/results", "directory for postgres.md and postgres.svg")
	perMessage := fs.Int("per-message", 1, "records per message: 1 as Conduit's default engine sends them; 0 for messages of the batch size, as the v2 engine carries a source's batches")
	_ = fs.Parse(args)

	batchSizes, err := ints("-batch-sizes", *batches)
	if err != nil {
		return err
	}
	conn, closeDB, err := database(ctx, url)
	if err != nil {
		return err
	}
	defer closeDB()
	if _, err := conn.Exec(ctx, benchTable); err != nil {
		return err
	}
	pairs := []pair{a}
	if b.destination != "" {
		pairs = append(pairs, b)
	}

	type result struct {
		st   host.Stats
		cpu  time.Duration // the plugin's processor time
		err  error
		note string
	}
	results := map[string]map[int]result{}
	total, done := len(batchSizes)*len(pairs), 0
	for _, batch := range batchSizes {
		for _, p := range pairs {
			done++
			fmt.Fprintf(os.Stderr, "\r\033[K[%d/%d] batch %d, %s ...", done, total, batch, p.name)
			if _, err := conn.Exec(ctx, "TRUNCATE bench"); err != nil {
				return err
			}
			cfg := host.Settings{"url": *url, "table": "bench", "sdk.batch.size": strconv.Itoa(batch)}
			for k, v := range p.destCfg {
				cfg[k] = v
			}
			var r result
			per := *perMessage
			if per == 0 {
				per = batch
			}
			r.st, r.cpu, r.err = feedPostgres(ctx, p.destination, cfg, *records, per)
			var stopErr *host.StopError
			if errors.As(r.err, &stopErr) {
				r.note, r.err = "Stop failed after every ack: "+oneLine(stopErr.Err), nil
			}
			if r.err == nil {
				var rows int64
				if err := conn.QueryRow(ctx, "SELECT count(*) FROM bench").Scan(&rows); err != nil {
					return err
				}
				if rows != *records {
					r.err = fmt.Errorf("%d rows in the table, expected %d", rows, *records)
				}
			}
			if results[p.name] == nil {
				results[p.name] = map[int]result{}
			}
			results[p.name][batch] = r
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	fmt.Fprintln(os.Stderr, "\r\033[Kdone")

	var t strings.Builder
	msgs := "one record per message"
	if *perMessage != 1 {
		msgs = fmt.Sprintf("%d records per message (0: the batch size)", *perMessage)
	}
	fmt.Fprintf(&t, "%d rows per run into (id bigint PRIMARY KEY, a text, b text, n int), %s, sdk.batch.size on the destination.\n\n", *records, msgs)
	t.WriteString("The plugin's processor time per row counts the plugin process alone, not the database or the host; it varies less than rows/s on a busy machine.\n\n")
	t.WriteString("| batch |")
	for _, p := range pairs {
		fmt.Fprintf(&t, " %s rows/s | %s ack p50 / p99 | %s CPU µs/row |", p.name, p.name, p.name)
	}
	if len(pairs) == 2 {
		t.WriteString(" ratio |")
	}
	t.WriteString("\n|---|" + strings.Repeat("---|---|---|", len(pairs)))
	if len(pairs) == 2 {
		t.WriteString("---|")
	}
	t.WriteString("\n")
	var series []chart.Series
	for i, p := range pairs {
		series = append(series, chart.Series{Label: p.name, Color: chart.Palette[i], Dashed: i == 1})
	}
	labels := make([]string, len(batchSizes))
	for bi, batch := range batchSizes {
		labels[bi] = strconv.Itoa(batch)
		fmt.Fprintf(&t, "| %d |", batch)
		for i, p := range pairs {
			r := results[p.name][batch]
			if r.err != nil {
				fmt.Fprintf(&t, " failed: %s | | |", oneLine(r.err))
				series[i].Values = append(series[i].Values, math.NaN())
				continue
			}
			note := ""
			if r.note != "" {
				note = " (" + r.note + ")"
			}
			fmt.Fprintf(&t, " %.0f%s | %s / %s | %.1f |", r.st.RecordsPerSecond(), note, ms(r.st.Latency(0.5)), ms(r.st.Latency(0.99)),
				float64(r.cpu.Microseconds())/float64(r.st.Records))
			series[i].Values = append(series[i].Values, r.st.RecordsPerSecond())
		}
		if len(pairs) == 2 {
			ra, rb := results[pairs[0].name][batch], results[pairs[1].name][batch]
			if ra.err == nil && rb.err == nil {
				fmt.Fprintf(&t, " %.1fx |", ra.st.RecordsPerSecond()/rb.st.RecordsPerSecond())
			} else {
				t.WriteString(" |")
			}
		}
		t.WriteString("\n")
	}
	svg := chart.Line("Postgres destination: rows per second by batch size", "batch size", "rows/s (log scale)", labels, series, true)
	return publish(*out, t.String(), map[string]string{"postgres.md": t.String(), "postgres.svg": svg})
}

// database connects to *url or, if it is empty, to a throwaway server it
// starts from the machine's binaries, setting *url; done closes both.
func database(ctx context.Context, url *string) (conn *pgx.Conn, done func(), err error) {
	stop := func() {}
	if *url == "" {
		srv, err := pgtest.Start()
		if err != nil {
			return nil, nil, err
		}
		stop = func() { _ = srv.Stop() }
		*url = srv.URL
	}
	conn, err = pgx.Connect(ctx, *url)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	return conn, func() { conn.Close(context.Background()); stop() }, nil
}

// feedPostgres sends n records, keyed by id, to a destination plugin, and
// returns the processor time the plugin spent on them.
func feedPostgres(ctx context.Context, path string, cfg host.Settings, n int64, perMessage int) (host.Stats, time.Duration, error) {
	dst, p, err := launchDestination(path, cfg)
	if err != nil {
		return host.Stats{}, 0, err
	}
	defer p.Kill()
	before, err := p.CPUTime()
	if err != nil {
		return host.Stats{}, 0, err
	}
	st, err := host.Feed(ctx, dst, n, perMessage, func(i int64) opencdc.Record {
		return opencdc.Record{
			Operation: opencdc.OperationCreate,
			Key:       opencdc.StructuredData{"id": i},
			Payload: opencdc.Change{After: opencdc.StructuredData{
				"a": "row-" + strconv.FormatInt(i, 10),
				"b": "a text column of moderate length",
				"n": i % 1000,
			}},
		}
	})
	after, cerr := p.CPUTime()
	return st, after - before, errors.Join(err, cerr)
}
