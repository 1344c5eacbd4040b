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
	"strconv"
	"strings"
	"time"

	"github.com/connkit/connkit/internal/chart"
	"github.com/connkit/connkit/internal/host"
)

// pair is a source and a destination plugin measured together.
type pair struct {
	name                string
	source, destination string
	sourceCfg, destCfg  host.Settings
}

// cell is one measured pipeline run.
type cell struct {
	payload, batch int
	pair           string
	res            host.Result
	err            error
}

func sweepMode(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sweep", flag.ExitOnError)
	a := pair{sourceCfg: host.Settings{}, destCfg: host.Settings{}}
	b := pair{sourceCfg: host.Settings{}, destCfg: host.Settings{}}
	fs.StringVar(&a.name, "name", "connkit", "name of the plugin pair")
	fs.StringVar(&a.source, "source", "bin/connkit-generator", "source plugin: a generator that takes format.type=file and format.options.path")
	fs.StringVar(&a.destination, "destination", "bin/connkit-log", "destination plugin")
	fs.Var(a.sourceCfg, "source-config", "extra source parameter as key=value (repeatable)")
	fs.Var(a.destCfg, "destination-config", "extra destination parameter as key=value (repeatable)")
	fs.StringVar(&b.name, "vs-name", "incumbent", "name of the second pair")
	fs.StringVar(&b.source, "vs-source", "", "second pair's source plugin, measured side by side")
	fs.StringVar(&b.destination, "vs-destination", "", "second pair's destination plugin")
	fs.Var(b.sourceCfg, "vs-source-config", "second pair's extra source parameter (repeatable)")
	fs.Var(b.destCfg, "vs-destination-config", "second pair's extra destination parameter (repeatable)")
	batchSizes := intsFlag(fs, "batch-sizes", "1,10,100,1000,10000", 1, "comma-separated batch sizes")
	payloadSizes := intsFlag(fs, "payload-sizes", "25,1024,10240", 1, "comma-separated raw payload sizes in bytes")
	records := fs.Int64("records", 100000, "records per run")
	runs := fs.Int("runs", 1, "times each cell is run, the pairs alternating every time; each run is a row of the table, the charts show the last")
	engine := fs.String("engine", "default", "default: one record per message to the destination, batching there (sdk.batch.size on the destination); v2: batching on the source, its messages forwarded whole")
	out := fs.String("out", "bench/results", "directory for results.md, throughput.svg and latency.svg")
	timeout := fs.Duration("timeout", 3*time.Minute, "longest a run may take; a run that stalls is reported as failed")
	_ = fs.Parse(args)

	if *runs < 1 {
		return fmt.Errorf("-runs: got %d, expected 1 or more", *runs)
	}
	if *engine != "default" && *engine != "v2" {
		return fmt.Errorf("-engine: got %q, expected default or v2", *engine)
	}
	pairs := []pair{a}
	if b.source != "" || b.destination != "" {
		if b.source == "" || b.destination == "" {
			return errors.New("-vs-source and -vs-destination go together")
		}
		pairs = append(pairs, b)
	}
	dir, err := os.MkdirTemp("", "bench-payload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	var cells []cell
	total, done := len(*payloadSizes)*len(*batchSizes)*len(pairs)**runs, 0
	for _, payload := range *payloadSizes {
		file := filepath.Join(dir, strconv.Itoa(payload))
		if err := os.WriteFile(file, []byte(strings.Repeat("x", payload)), 0o644); err != nil {
			return err
		}
		for _, batch := range *batchSizes {
			for range *runs {
				for _, p := range pairs { // pairs alternate, so both see the same conditions
					done++
					fmt.Fprintf(os.Stderr, "\r\033[K[%d/%d] payload %d B, batch %d, %s ...", done, total, payload, batch, p.name)
					c := cell{payload: payload, batch: batch, pair: p.name}
					runCtx, cancel := context.WithTimeout(ctx, *timeout)
					c.res, c.err = runPair(runCtx, p, file, batch, *records, *engine)
					cancel()
					if ctx.Err() != nil {
						return ctx.Err()
					}
					cells = append(cells, c)
				}
			}
		}
	}
	fmt.Fprintln(os.Stderr, "\r\033[Kdone")

	table := markdownTable(cells, pairs, *engine, *records)
	tp, lat := charts(cells, pairs, *batchSizes, *payloadSizes)
	return publish(*out, table, map[string]string{"results.md": table, "throughput.svg": tp, "latency.svg": lat})
}

// runPair runs one source → destination pipeline of n records.
func runPair(ctx context.Context, p pair, payloadFile string, batch int, n int64, engine string) (host.Result, error) {
	srcCfg := host.Settings{"format.type": "file", "format.options.path": payloadFile}
	dstCfg := host.Settings{}
	if engine == "v2" {
		srcCfg["sdk.batch.size"] = strconv.Itoa(batch)
	} else {
		dstCfg["sdk.batch.size"] = strconv.Itoa(batch)
	}
	maps.Copy(srcCfg, p.sourceCfg)
	maps.Copy(dstCfg, p.destCfg)
	src, srcPlugin, err := launchSource(p.source, srcCfg)
	if err != nil {
		return host.Result{}, err
	}
	defer srcPlugin.Kill()
	dst, dstPlugin, err := launchDestination(p.destination, dstCfg)
	if err != nil {
		return host.Result{}, err
	}
	defer dstPlugin.Kill()
	return host.Pipeline{Source: src, Destination: dst, Records: n, PerMessage: engine == "default"}.Run(ctx)
}

func markdownTable(cells []cell, pairs []pair, engine string, records int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d records per run, engine %s (batch size on the %s).\n\n", records, engine, map[string]string{"default": "destination", "v2": "source"}[engine])
	var names []string
	for _, p := range pairs {
		names = append(names, p.name)
	}
	writeTableHead(&b, "| payload | batch |"+pluginColumns(names, " %[1]s rec/s | %[1]s MB/s | %[1]s ack p50 / p99 |", " ratio |"))
	for i := 0; i < len(cells); i += len(pairs) {
		row := cells[i : i+len(pairs)]
		fmt.Fprintf(&b, "| %s | %d |", bytesLabel(row[0].payload), row[0].batch)
		for _, c := range row {
			if c.err != nil {
				fmt.Fprintf(&b, " failed: %s | | |", oneLine(c.err))
				continue
			}
			rps := float64(c.res.Acked) / c.res.Elapsed.Seconds()
			fmt.Fprintf(&b, " %.0f | %.1f | %s / %s |", rps, rps*float64(c.payload)/1e6, ms(c.res.Latency(0.5)), ms(c.res.Latency(0.99)))
		}
		if len(row) == 2 {
			if row[0].err == nil && row[1].err == nil {
				fmt.Fprintf(&b, " %.2fx |", rate(row[0])/rate(row[1]))
			} else {
				b.WriteString(" |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func rate(c cell) float64 { return float64(c.res.Acked) / c.res.Elapsed.Seconds() }

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + " ms"
}

func bytesLabel(n int) string {
	if n >= 1024 && n%1024 == 0 {
		return strconv.Itoa(n/1024) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}

func oneLine(err error) string {
	s := strings.ReplaceAll(err.Error(), "\n", " ")
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strings.ReplaceAll(s, "|", "/")
}

// charts draws throughput and p50 ack latency per batch size: a colour per
// payload size, solid lines for the first pair and dashed for the second.
func charts(cells []cell, pairs []pair, batches, payloads []int) (throughput, latency string) {
	var tp, lat []chart.Series
	for pi, p := range pairs {
		for yi, payload := range payloads {
			t := chart.Series{Label: p.name + ", " + bytesLabel(payload), Color: chart.Palette[yi%len(chart.Palette)], Dashed: pi == 1}
			l := t
			for _, batch := range batches {
				tv, lv := math.NaN(), math.NaN()
				for _, c := range cells {
					if c.pair == p.name && c.payload == payload && c.batch == batch && c.err == nil {
						tv = rate(c)
						lv = float64(c.res.Latency(0.5).Microseconds()) / 1000
					}
				}
				t.Values = append(t.Values, tv)
				l.Values = append(l.Values, lv)
			}
			tp, lat = append(tp, t), append(lat, l)
		}
	}
	labels := make([]string, len(batches))
	for i, b := range batches {
		labels[i] = strconv.Itoa(b)
	}
	return chart.Line("Throughput by batch size", "batch size", "records/s", labels, tp, false),
		chart.Line("Median ack latency by batch size", "batch size", "ms (log scale)", labels, lat, true)
}
