package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/connkit/connkit/internal/host"
)

// acksMode measures what the timing of a source's acks does to its
// latency in the v2 engine (each source message forwarded whole): the
// generator at a fixed rate into the log destination, once with acks
// passed on as the destination sends them (Conduit v0.14) and once held
// until a store every -store (Conduit v0.19), alternating run by run. The
// latency is from each record's opencdc.readAt to its ack, as Conduit's
// conduit_pipeline_execution_duration_seconds measures it.
func acksMode(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("acks", flag.ExitOnError)
	source := fs.String("source", "bin/connkit-generator", "source plugin: a generator that takes rate and format.options.*")
	destination := fs.String("destination", "bin/connkit-log", "destination plugin")
	srcCfg, dstCfg := host.Settings{}, host.Settings{}
	fs.Var(srcCfg, "source-config", "extra source parameter as key=value (repeatable)")
	fs.Var(dstCfg, "destination-config", "extra destination parameter as key=value (repeatable)")
	rate := fs.Float64("rate", 1000, "records per second the source makes")
	duration := fs.Duration("duration", 10*time.Second, "length of a run")
	store := fs.Duration("store", time.Second, "how often acks held as Conduit v0.19 holds them are stored and sent")
	runs := fs.Int("runs", 3, "runs of each mode, alternating")
	out := fs.String("out", "bench/results", "directory for acks.md")
	_ = fs.Parse(args)
	if *rate <= 0 || *runs < 1 {
		return fmt.Errorf("-rate and -runs: got %g and %d, expected both above 0", *rate, *runs)
	}

	n := int64(*rate * duration.Seconds())
	modes := []struct {
		name  string
		store time.Duration
	}{{"acks at once (v0.14)", 0}, {fmt.Sprintf("acks stored every %v (v0.19)", *store), *store}}
	results := make([][]host.Result, len(modes))
	for run := range *runs {
		for i, m := range modes {
			fmt.Fprintf(os.Stderr, "\r\033[K[run %d of %d] %s ...", run+1, *runs, m.name)
			res, err := runAcks(ctx, *source, *destination, srcCfg, dstCfg, *rate, n, m.store)
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			results[i] = append(results[i], res)
		}
	}
	fmt.Fprintln(os.Stderr, "\r\033[Kdone")

	var b strings.Builder
	fmt.Fprintf(&b, "%s at %g records/s → %s, %v a run, each source message forwarded whole (the v2 engine), the modes alternating run by run. Latency is from each record's opencdc.readAt to its ack, as Conduit's conduit_pipeline_execution_duration_seconds measures it.\n\n", *source, *rate, *destination, *duration)
	writeTableHead(&b, "| acks | run | rec/s | mean | p50 | p99 | of the mean, from the read to the host | source messages |")
	for i, m := range modes {
		for run, res := range results[i] {
			fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %s | %s | %s | %d |\n", m.name, run+1, float64(res.Acked)/res.Elapsed.Seconds(),
				ms(mean(res.ReadLatencies)), ms(res.ReadLatency(0.5)), ms(res.ReadLatency(0.99)), ms(mean(res.ReadLatencies)-mean(res.Latencies)), res.SourceBatches)
		}
	}
	table := b.String()
	return publish(*out, table, map[string]string{"acks.md": table})
}

// runAcks runs the generator at rate into the destination until n records
// are acked, holding the source's acks for stores every store (0: none).
func runAcks(ctx context.Context, source, destination string, srcExtra, dstExtra host.Settings, rate float64, n int64, store time.Duration) (host.Result, error) {
	srcCfg := host.Settings{"rate": strconv.FormatFloat(rate, 'g', -1, 64), "format.type": "structured", "format.options.id": "int", "format.options.name": "string"}
	maps.Copy(srcCfg, srcExtra)
	src, srcPlugin, err := launchSource(source, srcCfg)
	if err != nil {
		return host.Result{}, err
	}
	defer srcPlugin.Kill()
	dst, dstPlugin, err := launchDestination(destination, dstExtra)
	if err != nil {
		return host.Result{}, err
	}
	defer dstPlugin.Kill()
	runCtx, cancel := context.WithTimeout(ctx, time.Duration(float64(n)/rate*float64(time.Second))+time.Minute)
	defer cancel()
	res, err := host.Pipeline{Source: src, Destination: dst, Records: n, StoreEvery: store}.Run(runCtx)
	if err == nil && len(res.ReadLatencies) == 0 {
		err = fmt.Errorf("%s: its records carry no opencdc.readAt", source)
	}
	return res, err
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}
