// Package host plays Conduit's part towards connector plugins: it launches a
// plugin binary with the protocol's own client, the code Conduit uses, and
// runs sources and destinations the way Conduit's engines do. Tests,
// benchmarks and the development pipeline command use it.
package host

import (
	"fmt"
	"io"
	"strconv"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/conduitio/conduit-connector-protocol/pconnector/client"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
)

// Options configure a launched plugin. Zero values leave the environment
// variable unset, as Conduit does for the log level when it only loads
// specifications.
type Options struct {
	ConnectorID    string
	LogLevel       string // trace, debug, info, warn or error
	MaxReceiveSize int
	// Log receives the plugin's log lines, re-logged by go-plugin as Conduit
	// does. Nil discards them.
	Log io.Writer
	// LogLevel of the host's own logger, which filters the plugin's lines
	// after they arrive. Defaults to trace: everything the plugin sent.
	HostLogLevel string
}

// SourcePlugin is a source served by a launched plugin.
type SourcePlugin interface {
	pconnector.SourcePlugin
	NewStream() pconnector.SourceRunStream
}

// DestinationPlugin is a destination served by a launched plugin.
type DestinationPlugin interface {
	pconnector.DestinationPlugin
	NewStream() pconnector.DestinationRunStream
}

// Plugin is a running plugin process.
type Plugin struct {
	client *goplugin.Client
}

// Launch starts the plugin binary at path.
func Launch(path string, opts Options) (*Plugin, error) {
	logger := hclog.NewNullLogger()
	if opts.Log != nil {
		level := opts.HostLogLevel
		if level == "" {
			level = "trace"
		}
		logger = stdWriterFix{hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: opts.Log, Level: hclog.LevelFromString(level)})}
	}
	var env []client.Option
	add := func(key, value string) {
		if value != "" {
			env = append(env, client.WithEnvVar(key, value))
		}
	}
	// Conduit always sets a token and the address of its connector utilities
	// (the schema service); plugins built with the incumbent SDK refuse to
	// start without them. This host serves no utilities.
	add("CONDUIT_CONNECTOR_TOKEN", "connkit-host")
	add("CONDUIT_CONNECTOR_UTILITIES_GRPC_TARGET", "127.0.0.1:9")
	add(pconnector.EnvConduitConnectorID, opts.ConnectorID)
	add(pconnector.EnvConduitConnectorLogLevel, opts.LogLevel)
	if opts.MaxReceiveSize > 0 {
		add(pconnector.EnvConduitConnectorMaxReceiveRecordSize, strconv.Itoa(opts.MaxReceiveSize))
	}
	c, err := client.New(logger, path, env...)
	if err != nil {
		return nil, fmt.Errorf("launch %s: %w", path, err)
	}
	return &Plugin{client: c}, nil
}

func (p *Plugin) dispense(name string) (any, error) {
	rpc, err := p.client.Client()
	if err != nil {
		return nil, fmt.Errorf("connect to plugin: %w", err)
	}
	return rpc.Dispense(name)
}

// Specifier returns the plugin's specifier.
func (p *Plugin) Specifier() (pconnector.SpecifierPlugin, error) {
	raw, err := p.dispense("specifier")
	if err != nil {
		return nil, err
	}
	return raw.(pconnector.SpecifierPlugin), nil
}

// Source returns the plugin's source.
func (p *Plugin) Source() (SourcePlugin, error) {
	raw, err := p.dispense("source")
	if err != nil {
		return nil, err
	}
	return raw.(SourcePlugin), nil
}

// Destination returns the plugin's destination.
func (p *Plugin) Destination() (DestinationPlugin, error) {
	raw, err := p.dispense("destination")
	if err != nil {
		return nil, err
	}
	return raw.(DestinationPlugin), nil
}

// ProtocolVersion is the protocol version the plugin and host agreed on.
func (p *Plugin) ProtocolVersion() int { return p.client.NegotiatedVersion() }

// Kill ends the plugin process, as Conduit does after Teardown.
func (p *Plugin) Kill() { p.client.Kill() }

// stdWriterFix accepts the nil options the protocol's client passes to
// StandardWriter, which hclog's own logger dereferences.
type stdWriterFix struct{ hclog.Logger }

func (l stdWriterFix) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	if opts == nil {
		opts = &hclog.StandardLoggerOptions{}
	}
	return l.Logger.StandardWriter(opts)
}
