package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/chart"
	"github.com/connkit/connkit/internal/host"
	"github.com/jackc/pgx/v5"
)

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
	var f pgFlags
	f.define(fs, "source plugin", "second source plugin, measured side by side")
	f.defineConfig(fs)
	f.defineDialects(fs, "how the plugin spells its settings: connkit or incumbent", "how the second plugin spells its settings")
	batches := fs.String("batch-sizes", "0,10000", "comma-separated sdk.batch.size values; 0 sets no sdk.batch parameter (the plugin's default), others come with sdk.batch.delay=100ms")
	records := fs.Int64("records", 100000, "rows in the snapshot")
	changes := fs.Int64("changes", 100000, "changes to stream")
	out := fs.String("out", "bench/results", "directory for pgsource.md and pgsource.svg")
	rounds := fs.Int("rounds", 3, "runs of every measurement, interleaved; the median is reported")
	_ = fs.Parse(args)

	if *rounds < 1 {
		return fmt.Errorf("-rounds: got %d, expected at least 1", *rounds)
	}
	sizes, err := batchSizes(*batches)
	if err != nil {
		return err
	}
	plugins, err := f.plugins()
	if err != nil {
		return err
	}
	// The snapshot reads pgsource_snapshot; the changes are inserts into
	// pgsource_changes.
	conn, closeDB, err := database(ctx, &f.url, createTables("pgsource_snapshot", "pgsource_changes"))
	if err != nil {
		return err
	}
	defer closeDB()
	if err := fillTable(ctx, conn, "pgsource_snapshot", *records); err != nil {
		return err
	}

	type result struct {
		snapshot, cdc       []host.Stats // one per round
		snapshotErr, cdcErr error
	}
	results := map[string]map[int]*result{}
	for _, p := range plugins {
		results[p.name] = map[int]*result{}
		for _, batch := range sizes {
			results[p.name][batch] = &result{}
		}
	}
	total, done := *rounds*len(sizes)*len(plugins)*2, 0
	run := 0
	// Rounds outermost, so that every plugin and setting sees the machine's
	// changing load alike.
	for range *rounds {
		for _, batch := range sizes {
			for _, p := range plugins {
				r := results[p.name][batch]
				d := dialects[p.dialect]
				for _, phase := range []string{"snapshot", "cdc"} {
					done++
					run++
					fmt.Fprintf(os.Stderr, "\r\033[K[%d/%d] batch %d, %s, %s ...", done, total, batch, p.name, phase)
					name := fmt.Sprintf("bench_%d_%d", os.Getpid(), run)
					cfg := host.Settings{"url": f.url, d.slot: name, d.publication: name}
					if batch > 0 {
						cfg["sdk.batch.size"] = strconv.Itoa(batch)
						cfg["sdk.batch.delay"] = "100ms"
					}
					var st host.Stats
					var err error
					if phase == "snapshot" {
						maps.Copy(cfg, d.snapshot("pgsource_snapshot"))
						maps.Copy(cfg, p.config)
						st, err = drainSource(ctx, p.path, cfg, *records, nil)
						r.snapshot = append(r.snapshot, st)
						r.snapshotErr = cmp.Or(r.snapshotErr, err)
					} else {
						maps.Copy(cfg, d.never("pgsource_changes"))
						maps.Copy(cfg, p.config)
						if _, err := conn.Exec(ctx, `TRUNCATE pgsource_changes`); err != nil {
							return err
						}
						st, err = drainSource(ctx, p.path, cfg, *changes, func() error {
							_, err := conn.Exec(ctx, insertRows("pgsource_changes", 1, *changes))
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
	fmt.Fprintf(&t, "Snapshot of %d rows of %s, then %d inserts into a table like it streamed through logical replication; records per second over the plugin protocol, each record acked as it arrives; median of %d rounds.\n\n", *records, rowColumns, *changes, *rounds)
	writeTableHead(&t, "| sdk.batch.size |"+pluginColumns(names(plugins), " %s snapshot rec/s |", " ratio |")+pluginColumns(names(plugins), " %s CDC rec/s |", " ratio |"))
	var series []chart.Series
	for i, p := range plugins {
		series = append(series,
			chart.Series{Label: p.name + " snapshot", Color: chart.Palette[0], Dashed: i == 1},
			chart.Series{Label: p.name + " CDC", Color: chart.Palette[1], Dashed: i == 1})
	}
	labels := make([]string, len(sizes))
	for bi, batch := range sizes {
		labels[bi] = batchLabel(batch)
		fmt.Fprintf(&t, "| %s |", labels[bi])
		for ph := range 2 {
			for i, p := range plugins {
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
			if len(plugins) == 2 {
				ra, rb := results[plugins[0].name][batch], results[plugins[1].name][batch]
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
	return medianBy(runs, host.Stats.RecordsPerSecond)
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
