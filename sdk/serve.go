package sdk

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/plugin"
	"github.com/connkit/connkit/sdk/config"
)

// Serve runs c as a Conduit plugin; it is all a plugin's main needs to call.
// It returns only when Conduit ends the plugin, or once the process that
// started the plugin has exited (Conduit was killed, say): then it tears the
// connectors down first, so that nothing they hold (a replication slot, a
// lock, a connection) outlives Conduit. A plugin that no host connects to
// within 10 seconds of its start exits too: its host died before it could
// tell. Run with the argument "spec", the binary prints its [Connector.Specification]
// and exits instead: as JSON, or with "-format yaml" as a connector.yaml
// file, or with "-format markdown" as a table of its parameters for a
// README (see package config).
// A Connector that is not valid is reported on stderr and exits with status 1.
func Serve(c Connector) {
	if err := serve(c, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func serve(c Connector, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	spec, err := c.Specification()
	if err != nil {
		return err
	}
	if len(args) > 0 && args[0] == "spec" {
		return printSpec(spec, args[1:], stdout)
	}
	if len(args) > 0 {
		return fmt.Errorf("usage: %s [spec [-format json|yaml|markdown]]\n\nWithout arguments the binary runs as a Conduit plugin; Conduit starts it.", c.Name)
	}
	return plugin.Serve(c.factory(spec, getenv(pconnector.EnvConduitConnectorID)), getenv, stderr)
}

// printSpec writes spec to w in the format args name, JSON by default.
func printSpec(spec config.Specification, args []string, w io.Writer) error {
	flags := flag.NewFlagSet("spec", flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	format := flags.String("format", "json", "")
	usage := errors.New("usage: spec [-format json|yaml|markdown]")
	if err := flags.Parse(args); err != nil || flags.NArg() > 0 {
		return usage
	}
	switch *format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(spec)
	case "yaml":
		_, err := w.Write(spec.YAML())
		return err
	case "markdown":
		_, err := io.WriteString(w, spec.Markdown())
		return err
	}
	return fmt.Errorf("spec: -format %q: want json, yaml or markdown", *format)
}
