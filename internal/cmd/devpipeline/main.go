// Command devpipeline is a development tool, not Conduit: it runs one
// source plugin and one destination plugin as a pipeline, playing Conduit's
// part over the real plugin protocol, and prints what flowed (make
// devpipeline). The same plugins run in real Conduit: make pipeline, the
// pipeline command, runs one there.
//
//	devpipeline -source bin/connkit-generator -source-config format.options.id=int \
//	            -destination bin/connkit-log -records 10
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/host"
)

func main() {
	srcConfig, dstConfig := host.Settings{}, host.Settings{}
	srcPath := flag.String("source", "bin/connkit-generator", "source plugin binary")
	dstPath := flag.String("destination", "bin/connkit-log", "destination plugin binary")
	flag.Var(srcConfig, "source-config", "source parameter as key=value (repeatable)")
	flag.Var(dstConfig, "destination-config", "destination parameter as key=value (repeatable)")
	records := flag.Int64("records", 10, "stop after this many records are read and acked; what the source reads ahead of them is dropped, not acked (0: until interrupted)")
	perMessage := flag.Bool("per-message", true, "one record per destination message, as Conduit's default engine; false forwards source batches whole, as its v2 engine")
	logLevel := flag.String("log-level", "info", "log level of both plugins")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *srcPath, srcConfig, *dstPath, dstConfig, *records, *perMessage, *logLevel); err != nil {
		fmt.Fprintln(os.Stderr, "devpipeline:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, srcPath string, srcConfig host.Settings, dstPath string, dstConfig host.Settings, records int64, perMessage bool, logLevel string) error {
	// The plugins share a schema service, as they share Conduit's.
	schemas, err := host.StartSchemaService()
	if err != nil {
		return err
	}
	defer schemas.Stop()
	srcPlugin, err := host.Launch(srcPath, host.Options{ConnectorID: "devpipeline:source", LogLevel: logLevel, Log: os.Stdout, HostLogLevel: "info", Schemas: schemas})
	if err != nil {
		return err
	}
	defer srcPlugin.Kill()
	dstPlugin, err := host.Launch(dstPath, host.Options{ConnectorID: "devpipeline:destination", LogLevel: logLevel, Log: os.Stdout, HostLogLevel: "info", Schemas: schemas})
	if err != nil {
		return err
	}
	defer dstPlugin.Kill()

	src, err := srcPlugin.Source()
	if err != nil {
		return fmt.Errorf("source plugin: %w", err)
	}
	dst, err := dstPlugin.Destination()
	if err != nil {
		return fmt.Errorf("destination plugin: %w", err)
	}
	if _, err := src.Configure(ctx, pconnector.SourceConfigureRequest{Config: map[string]string(srcConfig)}); err != nil {
		return fmt.Errorf("source Configure: %w", err)
	}
	if _, err := dst.Configure(ctx, pconnector.DestinationConfigureRequest{Config: map[string]string(dstConfig)}); err != nil {
		return fmt.Errorf("destination Configure: %w", err)
	}
	if _, err := src.Open(ctx, pconnector.SourceOpenRequest{}); err != nil {
		return fmt.Errorf("source Open: %w", err)
	}
	if _, err := dst.Open(ctx, pconnector.DestinationOpenRequest{}); err != nil {
		return fmt.Errorf("destination Open: %w", err)
	}

	res, err := host.Pipeline{Source: src, Destination: dst, Records: records, Exact: true, PerMessage: perMessage}.Run(ctx)
	fmt.Printf("%d records read in %d source messages, %d acked in %v (%.0f records/s); source stopped at position %q\n",
		res.Read, res.SourceBatches, res.Acked, res.Elapsed.Round(time.Microsecond), float64(res.Acked)/res.Elapsed.Seconds(), res.LastPosition)
	if res.Dropped > 0 {
		fmt.Printf("%d more records the source sent ahead were dropped, not acked\n", res.Dropped)
	}
	return err
}
