package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/conduitio/conduit-commons/config"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/plugin"
	"github.com/connkit/connkit/middleware"
	"github.com/connkit/connkit/sdk/internal/served"
	"github.com/connkit/connkit/internal/schema"
)

// Serve runs c as a Conduit plugin; it is all a plugin's main needs to call.
// It returns only when Conduit ends the plugin, or once the process that
// started the plugin has exited (Conduit was killed, say): then it tears the
// connectors down first, so that nothing they hold (a replication slot, a
// lock, a connection) outlives Conduit. A plugin that no host connects to
// within 10 seconds of its start exits too: its host died before it could
// tell. Run with the argument "spec", the binary prints its [Specification]
// and exits instead: as JSON, or with "-format yaml" as a connector.yaml
// file ([Specification.YAML]), or with "-format markdown" as a table of its
// parameters for a README ([Specification.Markdown]).
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
	settings, warnings := plugin.SettingsFromEnv(getenv)
	for _, w := range warnings {
		fmt.Fprintln(stderr, w)
	}
	schemas, closeSchemas, err := schema.FromEnv(getenv)
	if err != nil {
		return err
	}
	defer closeSchemas.Close()
	settings.Context = func(ctx context.Context) context.Context { return schema.NewContext(ctx, schemas) }
	env := middleware.Env{Schemas: schemas, ConnectorID: getenv(pconnector.EnvConduitConnectorID)}
	return plugin.Serve(c.server(spec, env), settings, stderr)
}

// printSpec writes spec to w in the format args name, JSON by default.
func printSpec(spec Specification, args []string, w io.Writer) error {
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

func init() {
	served.Connector = func(c any) (plugin.Connector, error) {
		conn := c.(Connector)
		spec, err := conn.Specification()
		if err != nil {
			return plugin.Connector{}, err
		}
		return conn.server(spec, middleware.Env{}), nil
	}
}

// server returns what the plugin server serves for c: its specification,
// and how to configure its source and destination.
func (c Connector) server(spec Specification, env middleware.Env) plugin.Connector {
	pc := plugin.Connector{Spec: protocolSpec(spec)}
	if c.Source.isSet() {
		pc.NewSource = func(raw map[string]string) (plugin.Source, error) { return c.configureSource(raw, env) }
	}
	if c.Destination.isSet() {
		pc.NewDestination = func(raw map[string]string) (plugin.Destination, error) { return c.configureDestination(raw, env) }
	}
	return pc
}

func protocolSpec(s Specification) pconnector.Specification {
	return pconnector.Specification{
		Name:              s.Name,
		Summary:           s.Summary,
		Description:       s.Description,
		Version:           s.Version,
		Author:            s.Author,
		SourceParams:      protocolParams(s.SourceParameters),
		DestinationParams: protocolParams(s.DestinationParameters),
	}
}

func protocolParams(params []Parameter) config.Parameters {
	if params == nil {
		return nil
	}
	out := make(config.Parameters, len(params))
	for _, p := range params {
		out[p.Name] = p.protocol()
	}
	return out
}

// protocol converts p to the form Conduit shows users.
func (p Parameter) protocol() config.Parameter {
	out := config.Parameter{Default: p.Default, Description: p.Description}
	switch p.Type {
	case TypeInt:
		out.Type = config.ParameterTypeInt
	case TypeFloat:
		out.Type = config.ParameterTypeFloat
	case TypeBool:
		out.Type = config.ParameterTypeBool
	case TypeDuration:
		out.Type = config.ParameterTypeDuration
	default: // strings, and lists, which Conduit has no type for
		out.Type = config.ParameterTypeString
	}
	if p.Required {
		out.Validations = append(out.Validations, config.ValidationRequired{})
	}
	if p.GreaterThan != nil {
		out.Validations = append(out.Validations, config.ValidationGreaterThan{V: *p.GreaterThan})
	}
	if p.LessThan != nil {
		out.Validations = append(out.Validations, config.ValidationLessThan{V: *p.LessThan})
	}
	if len(p.OneOf) > 0 {
		out.Validations = append(out.Validations, config.ValidationInclusion{List: p.OneOf})
	}
	if len(p.NoneOf) > 0 {
		out.Validations = append(out.Validations, config.ValidationExclusion{List: p.NoneOf})
	}
	if p.pattern != nil {
		out.Validations = append(out.Validations, config.ValidationRegex{Regex: p.pattern})
	}
	return out
}
