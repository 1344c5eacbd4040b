package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/chart"
	"github.com/connkit/connkit/internal/host"
	"github.com/jackc/pgx/v5"
)

// The pgsource mode's tables: the snapshot reads pgsource_snapshot, the
// changes are inserts into pgsource_changes.
const pgsourceTables = `
	CREATE TABLE IF NOT EXISTS pgsource_snapshot (id bigint PRIMARY KEY, a text, b text, n int);
	CREATE TABLE IF NOT EXISTS pgsource_changes (id bigint PRIMARY KEY, a text, b text, n int)`

const pgsourceRows = `SELECT i, 'row-' || i, 'a text column of moderate length', i %% 1000 FROM generate_series(%d, %d) i`

// snapshotFetchSize is the rows per snapshot query for both dialects:
// connkit's default. The incumbent's default of 50000 makes it send 50000
// records in one message, over gRPC's 4 MiB limit for this table's rows.
const snapshotFetchSize = "10000"

// sourceDialect says how a Postgres source plugin spells its settings.
type sourceDialect struct {
	snapshot, never   func(table string) host.Settings
	slot, publication string
}

var dialects = map[string]sourceDialect{
	"connkit": {
		snapshot: func(t string) host.Settings {
			return host.Settings{"tables": t, "snapshot.mode": "initial", "snapshot.fetchSize": snapshotFetchSize}
		},
		never:       func(t string) host.Settings { return host.Settings{"tables": t, "snapshot.mode": "never"} },
		slot:        "slot.name",
		publication: "publication.name",
	},
	"incumbent": {
		snapshot: func(t string) host.Settings {
			return host.Settings{"tables": t, "snapshotMode": "initial", "snapshot.fetchSize": snapshotFetchSize, "cdcMode": "logrepl", "logrepl.withAvroSchema": "false"}
		},
		never: func(t string) host.Settings {
			return host.Settings{"tables": t, "snapshotMode": "never", "cdcMode": "logrepl", "logrepl.withAvroSchema": "false"}
		},
		slot:        "logrepl.slotName",
		publication: "logrepl.publicationName",
	},
}

// pgsourceMode measures Postgres sources over the plugin protocol: records
// per second of a snapshot of a table of -records rows, and of the changes
// (-changes inserts, committed before reading starts) streamed through
// logical replication, for one or two plugins side by side, once per batch
// setting. Each run has a fresh replication slot and publication and must
// deliver every record.
func pgsourceMode(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("pgsource", flag.ExitOnError)
	a := pair{sourceCfg: host.Settings{}}
	b := pair{sourceCfg: host.Settings{}}
	var aDialect, bDialect string
	fs.StringVar(&a.name, "name", "connkit", "name of the plugin")
	fs.StringVar(&a.source, "plugin", "bin/connkit-postgres", "source plugin")
	fs.Var(a.sourceCfg, "config", "extra parameter as key=value (repeatable)")
	fs.StringVar(&aDialect, "dialect", "connkit", "how the plugin spells its settings: connkit or incumbent")
	fs.StringVar(&b.name, "vs-name", "incumbent", "name of the second plugin")
	fs.StringVar(&b.source, "vs-plugin", "", "second source plugin, measured side by side")
	fs.Var(b.sourceCfg, "vs-config", "second plugin's extra parameter (repeatable)")
	fs.StringVar(&bDialect, "vs-dialect", "incumbent", "how the second plugin spells its settings")
	url := fs.String("url", "", "PostgreSQL URL; empty starts a throwaway server from the machine's binaries")
	batches := fs.String("batch-sizes", "0,10000", "comma-separated sdk.batch.size values; 0 sets no sdk.batch parameter (the plugin's default), others come with sdk.batch.delay=100ms")
	records := fs.Int64("records", 100000, "rows in the snapshot")
	changes := fs.Int64("changes", 100000, "changes to stream")
	out := fs.String("out", "bench/results", "directory for pgsource.md and pgsource.svg")
	rounds := fs.Int("rounds", 3, "runs of every measurement, interleaved; the median is reported")
	_ = fs.Parse(args)

	if *rounds < 1 {
		return fmt.Errorf("-rounds: got %d, expected at least 1", *rounds)
	}
	var batchSizes []int
	for s := range strings.SplitSeq(*batches, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 0 {
			return fmt.Errorf("-batch-sizes: %q is not a non-negative integer", s)
		}
		batchSizes = append(batchSizes, n)
	}
	pairs := []pair{a}
	kinds := []sourceDialect{}
	for _, d := range []string{aDialect, bDialect} {
		k, ok := dialects[d]
		if !ok {
			return fmt.Errorf("-dialect: got %q, expected connkit or incumbent", d)
		}
		kinds = append(kinds, k)
	}
	if b.source != "" {
		pairs = append(pairs, b)
	}
	conn, closeDB, err := database(ctx, url, pgsourceTables)
	if err != nil {
		return err
	}
	defer closeDB()
	var have int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pgsource_snapshot`).Scan(&have); err != nil {
		return err
	}
	if have != *records {
		if _, err := conn.Exec(ctx, `TRUNCATE pgsource_snapshot; INSERT INTO pgsource_snapshot `+fmt.Sprintf(pgsourceRows, 1, *records)); err != nil {
			return err
		}
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE pgsource_snapshot`); err != nil {
		return err
	}

	type result struct {
		snapshot, cdc       []host.Stats // one per round
		snapshotErr, cdcErr error
	}
	results := map[string]map[int]*result{}
	for _, p := range pairs {
		results[p.name] = map[int]*result{}
		for _, batch := range batchSizes {
			results[p.name][batch] = &result{}
		}
	}
	total, done := *rounds*len(batchSizes)*len(pairs)*2, 0
	run := 0
	// Rounds outermost, so that every plugin and setting sees the machine's
	// changing load alike.
	for range *rounds {
		for _, batch := range batchSizes {
			for i, p := range pairs {
				r := results[p.name][batch]
				for _, phase := range []string{"snapshot", "cdc"} {
					done++
					run++
					fmt.Fprintf(os.Stderr, "\r\033[K[%d/%d] batch %d, %s, %s ...", done, total, batch, p.name, phase)
					name := fmt.Sprintf("bench_%d_%d", os.Getpid(), run)
					cfg := host.Settings{"url": *url, kinds[i].slot: name, kinds[i].publication: name}
					if batch > 0 {
						cfg["sdk.batch.size"] = strconv.Itoa(batch)
						cfg["sdk.batch.delay"] = "100ms"
					}
					var st host.Stats
					var err error
					if phase == "snapshot" {
						for k, v := range kinds[i].snapshot("pgsource_snapshot") {
							cfg[k] = v
						}
						for k, v := range p.sourceCfg {
							cfg[k] = v
						}
						st, err = drainSource(ctx, p.source, cfg, *records, nil)
						r.snapshot = append(r.snapshot, st)
						r.snapshotErr = cmp.Or(r.snapshotErr, err)
					} else {
						for k, v := range kinds[i].never("pgsource_changes") {
							cfg[k] = v
						}
						for k, v := range p.sourceCfg {
							cfg[k] = v
						}
						if _, err := conn.Exec(ctx, `TRUNCATE pgsource_changes`); err != nil {
							return err
						}
						st, err = drainSource(ctx, p.source, cfg, *changes, func() error {
							_, err := conn.Exec(ctx, `INSERT INTO pgsource_changes `+fmt.Sprintf(pgsourceRows, 1, *changes))
							return err
						})
						r.cdc = append(r.cdc, st)
						r.cdcErr = cmp.Or(r.cdcErr, err)
					}
					if derr := dropReplication(ctx, conn, name); derr != nil {
						return derr
					}
					if ctx.Err() != nil {
						return ctx.Err()
					}
				}
			}
		}
	}
	fmt.Fprintln(os.Stderr, "\r\033[Kdone")

	var t strings.Builder
	fmt.Fprintf(&t, "Snapshot of %d rows of (id bigint PRIMARY KEY, a text, b text, n int), then %d inserts into a table like it streamed through logical replication; records per second over the plugin protocol, each record acked as it arrives; median of %d rounds.\n\n", *records, *changes, *rounds)
	t.WriteString("| sdk.batch.size |")
	for _, p := range pairs {
		fmt.Fprintf(&t, " %s snapshot rec/s |", p.name)
	}
	if len(pairs) == 2 {
		t.WriteString(" ratio |")
	}
	for _, p := range pairs {
		fmt.Fprintf(&t, " %s CDC rec/s |", p.name)
	}
	if len(pairs) == 2 {
		t.WriteString(" ratio |")
	}
	cols := len(pairs)*2 + 1
	if len(pairs) == 2 {
		cols += 2
	}
	t.WriteString("\n|" + strings.Repeat("---|", cols) + "\n")
	var series []chart.Series
	for i, p := range pairs {
		series = append(series,
			chart.Series{Label: p.name + " snapshot", Color: chart.Palette[0], Dashed: i == 1},
			chart.Series{Label: p.name + " CDC", Color: chart.Palette[1], Dashed: i == 1})
	}
	labels := make([]string, len(batchSizes))
	for bi, batch := range batchSizes {
		label := strconv.Itoa(batch)
		if batch == 0 {
			label = "not set"
		}
		labels[bi] = label
		fmt.Fprintf(&t, "| %s |", label)
		for ph := range 2 {
			for i, p := range pairs {
				r := results[p.name][batch]
				st, err := median(r.snapshot), r.snapshotErr
				if ph == 1 {
					st, err = median(r.cdc), r.cdcErr
				}
				if err != nil {
					fmt.Fprintf(&t, " failed: %s |", oneLine(err))
					series[2*i+ph].Values = append(series[2*i+ph].Values, math.NaN())
					continue
				}
				fmt.Fprintf(&t, " %.0f |", st.RecordsPerSecond())
				series[2*i+ph].Values = append(series[2*i+ph].Values, st.RecordsPerSecond())
			}
			if len(pairs) == 2 {
				ra, rb := results[pairs[0].name][batch], results[pairs[1].name][batch]
				sa, sb, ea, eb := median(ra.snapshot), median(rb.snapshot), ra.snapshotErr, rb.snapshotErr
				if ph == 1 {
					sa, sb, ea, eb = median(ra.cdc), median(rb.cdc), ra.cdcErr, rb.cdcErr
				}
				if ea == nil && eb == nil {
					fmt.Fprintf(&t, " %.1fx |", sa.RecordsPerSecond()/sb.RecordsPerSecond())
				} else {
					t.WriteString(" |")
				}
			}
		}
		t.WriteString("\n")
	}
	svg := chart.Line("Postgres source: records per second", "sdk.batch.size", "records/s (log scale)", labels, series, true)
	return publish(*out, t.String(), map[string]string{"pgsource.md": t.String(), "pgsource.svg": svg})
}

// median returns the run with the median records per second; a run that
// failed counts as slowest, but a failure is reported anyway.
func median(runs []host.Stats) host.Stats {
	if len(runs) == 0 {
		return host.Stats{}
	}
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b host.Stats) int {
		return cmp.Compare(a.RecordsPerSecond(), b.RecordsPerSecond())
	})
	return sorted[len(sorted)/2]
}

// drainSource launches, configures and opens a source and reads n records
// from it. Without commit, the time counts from Open, where a source starts
// its snapshot; with it, commit makes the changes to read after Open, and
// the time counts from when it returns, since no change can be read before
// its transaction commits.
func drainSource(ctx context.Context, path string, cfg host.Settings, n int64, commit func() error) (host.Stats, error) {
	p, err := launch(path)
	if err != nil {
		return host.Stats{}, err
	}
	defer p.Kill()
	src, err := p.Source()
	if err != nil {
		return host.Stats{}, err
	}
	if _, err := src.Configure(ctx, pconnector.SourceConfigureRequest{Config: map[string]string(cfg)}); err != nil {
		return host.Stats{}, err
	}
	start := time.Now()
	if _, err := src.Open(ctx, pconnector.SourceOpenRequest{}); err != nil {
		return host.Stats{}, err
	}
	if commit != nil {
		if err := commit(); err != nil {
			return host.Stats{}, err
		}
		start = time.Now()
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	return host.DrainSince(ctx, src, n, start)
}

// dropReplication drops a run's replication slot, once its reader is gone,
// and its publication.
func dropReplication(ctx context.Context, conn *pgx.Conn, name string) error {
	for deadline := time.Now().Add(30 * time.Second); ; {
		var left int
		err := conn.QueryRow(ctx, `SELECT count(pg_drop_replication_slot(slot_name)) FILTER (WHERE NOT active) - count(*) FROM pg_replication_slots WHERE slot_name = $1`, name).Scan(&left)
		if err != nil {
			return fmt.Errorf("drop replication slot %s: %w", name, err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("replication slot " + name + " stayed active after its plugin was killed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, err := conn.Exec(ctx, "DROP PUBLICATION IF EXISTS "+pgx.Identifier{name}.Sanitize())
	return err
}
