// Command bench plays Conduit's part towards standalone connector plugins,
// connkit's or anyone else's, and measures them over the real protocol.
//
//	bench source      -plugin BIN [-config k=v ...] [-records N]
//	bench destination -plugin BIN [-config k=v ...] [-records N] [-payload BYTES | -fields id=int,...] [-per-message N]
//	bench sweep       -source BIN -destination BIN [-vs-source BIN -vs-destination BIN] [-out DIR] ...
//	bench postgres    -plugin BIN [-vs-plugin BIN] [-vs-config k=v ...] [-keyless] [-operation create|update] [-rounds N] [-url URL] [-out DIR] ...
//	bench pgsource    -plugin BIN [-vs-plugin BIN] [-url URL] [-out DIR] ...
//	bench conduit     -plugin BIN [-vs-plugin BIN] [-config k=v ...] [-vs-config k=v ...] [-conduit BIN] [-url URL] [-out DIR] ...
//	bench replicate   -plugin BIN [-vs-plugin BIN] [-conduit BIN] [-url URL] [-out DIR] ...
//	bench acks        [-source BIN] [-destination BIN] [-rate N] [-store D] [-runs N] [-out DIR]
//	bench latency     [-conduit BIN,...] [-vs-generator BIN] [-vs-postgres BIN] [-rate N] [-cdc-rate N] [-out DIR]
//	bench http        [-plugin BIN] [-conduit BIN] [-sinks plain,limit,queueing,dropping] [-latency D] [-batch N] [-max-concurrent N] [-workers N] [-backlog N] [-rate N] [-out DIR] ...
//
// source reads N records, acking as Conduit does, and reports records/s and
// records per message. destination sends N generated records and reports
// records/s, MB/s and ack latency percentiles, checking that every ack
// arrives, in order. sweep runs source → destination pipelines over a grid
// of batch sizes and payload sizes, optionally for a second pair of plugins
// side by side, and writes a table and SVG charts. postgres measures Postgres
// destinations into a 4-column table over a range of batch sizes, checking
// the rows each run leaves, beside a binary COPY of the same rows into the
// same table (each plugin's rows/s as a share of COPY's from the same
// round), and writes a table and an SVG chart. pgsource
// measures Postgres sources: records per second of a snapshot and of
// changes streamed through logical replication, and writes a table and an
// SVG chart. conduit runs the published batching experiment in real
// Conduit (builtin generator → key hoisted by builtin processors → a
// standalone Postgres destination) over batch sizes and both engines, with
// a ceiling pipeline into Conduit's builtin log destination beside them, and
// reports rows/s (also as a share of the ceiling's), mean and p99 latency
// from Conduit's own metrics, the processor time per row and peak memory
// of Conduit, the plugin and PostgreSQL, and the connections the Postgres
// destination holds at the end of the window (the most Writes it had in
// flight together), as a table, a CSV file and an SVG chart; a batch size
// given twice is two rows, each measured. replicate runs Postgres source →
// Postgres destination pipelines in real Conduit with no batch settings, in
// both engines, and reports rows/s and latency of the snapshot and of the
// changes streamed after it, what each process used, and the destination's
// connections at the end of each. acks runs a source at a fixed rate into
// a destination as the v2 engine does, with acks passed on at
// once and held for a store every second (as Conduit v0.19 holds them),
// side by side, and reports latency from each record's read. latency runs
// sources below their capacity in real Conduit, a generator and Postgres
// changes into a log destination, connkit's beside the incumbent SDK's, in
// both engines of each Conduit binary given, and reports the mean latency
// from Conduit's own metrics. http runs Conduit's builtin generator into
// connkit's http destination, bound by latency, in real Conduit, against
// servers on loopback that answer each batch after a fixed latency, with
// several sdk.write.concurrency settings: a server that serves any number
// together (auto and 1), one that refuses with 429 beyond a number in
// flight (auto), one of a few workers that queues the rest, and one of
// HTTP/1.0 whose short listen backlog drops connections under load (1, as
// many as their workers, and auto); it reports rows/s and mean latency
// from Conduit's own metrics, the plugin's mean Write and the limit auto
// settled at, the requests the server saw, and whether every record
// reached it once, the pipeline running with its acks in order.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/host"
)

// modes are the command's modes by name.
var modes = map[string]func(ctx context.Context, args []string) error{
	"source":      sourceMode,
	"destination": destinationMode,
	"sweep":       sweepMode,
	"postgres":    postgresMode,
	"pgsource":    pgsourceMode,
	"conduit":     conduitMode,
	"replicate":   replicateMode,
	"acks":        acksMode,
	"latency":     latencyMode,
	"http":        httpMode,
}

func main() {
	if len(os.Args) < 2 || modes[os.Args[1]] == nil {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	if schemas, err = host.StartSchemaService(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	defer schemas.Stop()
	if err = modes[os.Args[1]](ctx, os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: bench source|destination|sweep|postgres|pgsource|conduit|replicate|acks|latency|http [flags]; bench MODE -h lists a mode's flags")
	os.Exit(2)
}

func sourceMode(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("source", flag.ExitOnError)
	path := fs.String("plugin", "bin/connkit-generator", "source plugin binary")
	config := host.Settings{}
	fs.Var(config, "config", "source parameter as key=value (repeatable)")
	records := fs.Int64("records", 100000, "records to read")
	_ = fs.Parse(args)

	src, p, err := launchSource(*path, config)
	if err != nil {
		return err
	}
	defer p.Kill()
	st, err := host.Drain(ctx, src, *records)
	if err != nil {
		return err
	}
	fmt.Printf("%d records in %v: %.0f records/s, %.1f MB/s of payload, %.1f records per message\n",
		st.Records, st.Elapsed.Round(time.Millisecond), st.RecordsPerSecond(), st.MBPerSecond(), float64(st.Records)/float64(st.Messages))
	return nil
}

func destinationMode(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("destination", flag.ExitOnError)
	path := fs.String("plugin", "bin/connkit-log", "destination plugin binary")
	config := host.Settings{}
	fs.Var(config, "config", "destination parameter as key=value, e.g. sdk.batch.size=1000 (repeatable)")
	records := fs.Int64("records", 100000, "records to send")
	payload := fs.Int("payload", 1024, "raw payload size in bytes (ignored with -fields)")
	fields := fs.String("fields", "", "structured payload instead: comma-separated name=type, types int, string, bool")
	perMessage := fs.Int("per-message", 1, "records per message: 1 as Conduit's default engine sends them")
	_ = fs.Parse(args)

	newRecord, err := recordMaker(*payload, *fields)
	if err != nil {
		return err
	}
	dst, p, err := launchDestination(*path, config)
	if err != nil {
		return err
	}
	defer p.Kill()
	st, err := host.Feed(ctx, dst, *records, *perMessage, newRecord)
	if err != nil {
		return err
	}
	fmt.Printf("%d records in %v: %.0f records/s, %.1f MB/s; ack latency p50 %v, p90 %v, p99 %v, max %v\n",
		st.Records, st.Elapsed.Round(time.Millisecond), st.RecordsPerSecond(), st.MBPerSecond(),
		st.Latency(0.5), st.Latency(0.9), st.Latency(0.99), st.Latency(1))
	return nil
}

// recordMaker returns a function making record i: a raw payload of size
// bytes, or structured data with the given fields.
func recordMaker(size int, fields string) (func(int64) opencdc.Record, error) {
	if fields == "" {
		payload := opencdc.RawData(strings.Repeat("x", size))
		return func(int64) opencdc.Record {
			return opencdc.Record{Operation: opencdc.OperationCreate, Payload: opencdc.Change{After: payload}}
		}, nil
	}
	type field struct{ name, typ string }
	var fs []field
	for f := range strings.SplitSeq(fields, ",") {
		name, typ, _ := strings.Cut(strings.TrimSpace(f), "=")
		switch typ {
		case "int", "string", "bool":
		default:
			return nil, fmt.Errorf("-fields: field %q has type %q, expected int, string or bool", name, typ)
		}
		fs = append(fs, field{name, typ})
	}
	return func(i int64) opencdc.Record {
		data := make(opencdc.StructuredData, len(fs))
		for _, f := range fs {
			switch f.typ {
			case "int":
				data[f.name] = i
			case "string":
				data[f.name] = "value-" + strconv.FormatInt(i, 10)
			case "bool":
				data[f.name] = i%2 == 0
			}
		}
		return opencdc.Record{Operation: opencdc.OperationCreate, Key: opencdc.RawData(strconv.FormatInt(i, 10)), Payload: opencdc.Change{After: data}}
	}, nil
}

// schemas is the schema service every plugin of a bench run shares, as
// plugins share Conduit's.
var schemas *host.SchemaService

func launch(path string) (*host.Plugin, error) {
	return host.Launch(path, host.Options{ConnectorID: "bench", LogLevel: "info", Schemas: schemas})
}

// launchSource starts, configures and opens a source; p.Kill ends the
// process once the source is torn down.
func launchSource(path string, config map[string]string) (src host.SourcePlugin, p *host.Plugin, err error) {
	p, err = launch(path)
	if err != nil {
		return nil, nil, err
	}
	src, err = p.Source()
	if err == nil {
		_, err = src.Configure(context.Background(), pconnector.SourceConfigureRequest{Config: config})
	}
	if err == nil {
		_, err = src.Open(context.Background(), pconnector.SourceOpenRequest{})
	}
	if err != nil {
		p.Kill()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return src, p, nil
}

// launchDestination is launchSource for destinations.
func launchDestination(path string, config map[string]string) (dst host.DestinationPlugin, p *host.Plugin, err error) {
	p, err = launch(path)
	if err != nil {
		return nil, nil, err
	}
	dst, err = p.Destination()
	if err == nil {
		_, err = dst.Configure(context.Background(), pconnector.DestinationConfigureRequest{Config: config})
	}
	if err == nil {
		_, err = dst.Open(context.Background(), pconnector.DestinationOpenRequest{})
	}
	if err != nil {
		p.Kill()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return dst, p, nil
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

// publish prints a results table and writes the files of a run into dir:
// name → content, the table's markdown and its charts.
func publish(dir, table string, files map[string]string) error {
	fmt.Print(table)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// pluginColumns returns head cells of a results table: cols for each
// plugin, %[1]s standing for its name, and for two plugins, ratios.
func pluginColumns(names []string, cols, ratios string) string {
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, cols, name)
	}
	if len(names) == 2 {
		b.WriteString(ratios)
	}
	return b.String()
}

// writeTableHead writes the head of a table, its cells between bars, and
// the line under it.
func writeTableHead(b *strings.Builder, head string) {
	b.WriteString(head + "\n|" + strings.Repeat("---|", strings.Count(head, "|")-1) + "\n")
}

// medianBy returns the element of xs with the median key, the upper one of
// an even count.
func medianBy[T any](xs []T, key func(T) float64) T {
	sorted := slices.Clone(xs)
	slices.SortFunc(sorted, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return sorted[len(sorted)/2]
}
