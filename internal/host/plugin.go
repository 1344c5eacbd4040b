// Package host plays Conduit's part towards connector plugins: it launches a
// plugin binary with the protocol's own client, the code Conduit uses, and
// runs sources and destinations the way Conduit's engines do. Tests,
// benchmarks and the development pipeline command use it.
package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/conduitio/conduit-connector-protocol/pconnector/client"
	"github.com/conduitio/conduit-connector-protocol/pconnutils"
	connectorv2 "github.com/conduitio/conduit-connector-protocol/proto/connector/v2"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
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
	// Schemas is the schema service the plugin uses. Plugins in one
	// pipeline must share one, as they share Conduit's; nil starts one for
	// this plugin alone, stopped by Kill.
	Schemas *SchemaService
	// Token is the connector token the plugin presents to the schema
	// service (CONDUIT_CONNECTOR_TOKEN); empty means DefaultToken. Conduit
	// gives each connector its own.
	Token string
	// MutualTLS has go-plugin secure the connection with certificates it
	// makes for the plugin and the host, as a host that sets AutoMTLS
	// does (Conduit does not).
	MutualTLS bool
}

// DefaultToken is the connector token plugins get when Options name none.
const DefaultToken = "connkit-host"

// SourceClient is the protocol's source client, as Conduit uses it.
type SourceClient interface {
	pconnector.SourcePlugin
	NewStream() pconnector.SourceRunStream
}

// DestinationClient is the protocol's destination client, as Conduit uses it.
type DestinationClient interface {
	pconnector.DestinationPlugin
	NewStream() pconnector.DestinationRunStream
}

// SourcePlugin is a source served by a launched plugin.
type SourcePlugin interface {
	SourceClient
	// runProto opens the Run stream in the protocol's own message types,
	// which Pipeline forwards without converting records.
	runProto(ctx context.Context, opts ...grpc.CallOption) (connectorv2.SourcePlugin_RunClient, error)
}

// DestinationPlugin is a destination served by a launched plugin.
type DestinationPlugin interface {
	DestinationClient
	runProto(ctx context.Context, opts ...grpc.CallOption) (connectorv2.DestinationPlugin_RunClient, error)
}

type sourcePlugin struct {
	SourceClient
	conn *grpc.ClientConn
}

func (s sourcePlugin) runProto(ctx context.Context, opts ...grpc.CallOption) (connectorv2.SourcePlugin_RunClient, error) {
	return connectorv2.NewSourcePluginClient(s.conn).Run(ctx, opts...)
}

type destinationPlugin struct {
	DestinationClient
	conn *grpc.ClientConn
}

func (d destinationPlugin) runProto(ctx context.Context, opts ...grpc.CallOption) (connectorv2.DestinationPlugin_RunClient, error) {
	return connectorv2.NewDestinationPluginClient(d.conn).Run(ctx, opts...)
}

type clientOption func(*goplugin.ClientConfig) error

func (f clientOption) ApplyOption(cfg *goplugin.ClientConfig) error { return f(cfg) }

// Plugin is a running plugin process.
type Plugin struct {
	client  *goplugin.Client
	schemas *SchemaService // the plugin's own, if it has one
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
	// start without them.
	schemas, own := opts.Schemas, opts.Schemas == nil
	if own {
		var err error
		if schemas, err = StartSchemaService(); err != nil {
			return nil, err
		}
	}
	token := opts.Token
	if token == "" {
		token = DefaultToken
	}
	add(pconnutils.EnvConduitConnectorToken, token)
	add(pconnutils.EnvConduitConnectorUtilitiesGRPCTarget, schemas.Target())
	add(pconnector.EnvConduitConnectorID, opts.ConnectorID)
	add(pconnector.EnvConduitConnectorLogLevel, opts.LogLevel)
	if opts.MaxReceiveSize > 0 {
		add(pconnector.EnvConduitConnectorMaxReceiveRecordSize, strconv.Itoa(opts.MaxReceiveSize))
	}
	if opts.MutualTLS {
		env = append(env, clientOption(func(cfg *goplugin.ClientConfig) error { cfg.AutoMTLS = true; return nil }))
	}
	c, err := client.New(logger, path, env...)
	if err != nil {
		if own {
			schemas.Stop()
		}
		return nil, fmt.Errorf("launch %s: %w", path, err)
	}
	p := &Plugin{client: c}
	if own {
		p.schemas = schemas
	}
	return p, nil
}

func (p *Plugin) dispense(name string) (any, *grpc.ClientConn, error) {
	rpc, err := p.client.Client()
	if err != nil {
		return nil, nil, fmt.Errorf("connect to plugin: %w", err)
	}
	if v := p.client.NegotiatedVersion(); v != 2 {
		return nil, nil, fmt.Errorf("plugin speaks protocol version %d; this host needs version 2, as Conduit v0.14 uses", v)
	}
	raw, err := rpc.Dispense(name)
	if err != nil {
		return nil, nil, err
	}
	return raw, rpc.(*goplugin.GRPCClient).Conn, nil
}

// Specifier returns the plugin's specifier.
func (p *Plugin) Specifier() (pconnector.SpecifierPlugin, error) {
	raw, _, err := p.dispense("specifier")
	if err != nil {
		return nil, err
	}
	return raw.(pconnector.SpecifierPlugin), nil
}

// Source returns the plugin's source.
func (p *Plugin) Source() (SourcePlugin, error) {
	raw, conn, err := p.dispense("source")
	if err != nil {
		return nil, err
	}
	return sourcePlugin{SourceClient: raw.(SourceClient), conn: conn}, nil
}

// Destination returns the plugin's destination.
func (p *Plugin) Destination() (DestinationPlugin, error) {
	raw, conn, err := p.dispense("destination")
	if err != nil {
		return nil, err
	}
	return destinationPlugin{DestinationClient: raw.(DestinationClient), conn: conn}, nil
}

// ProtocolVersion is the protocol version the plugin and host agreed on.
func (p *Plugin) ProtocolVersion() int { return p.client.NegotiatedVersion() }

// Kill ends the plugin process, as Conduit does after Teardown.
func (p *Plugin) Kill() {
	p.client.Kill()
	if p.schemas != nil {
		p.schemas.Stop()
	}
}

// Crash kills the plugin process with SIGKILL, as the kernel's OOM killer
// or a power cut would: the plugin gets no Stop, no Teardown and no chance
// to flush or acknowledge anything. It returns once the process is gone and
// what Kill releases is released; Kill after Crash does nothing more.
func (p *Plugin) Crash() error {
	rc := p.client.ReattachConfig()
	if rc == nil || rc.Pid == 0 {
		return errors.New("host: crash the plugin: its process is not running")
	}
	proc, err := os.FindProcess(rc.Pid)
	if err == nil {
		err = proc.Signal(syscall.SIGKILL)
	}
	if err != nil {
		return fmt.Errorf("host: kill -9 the plugin (pid %d): %w", rc.Pid, err)
	}
	p.Kill() // waits for the process to end, then cleans up
	return nil
}

// stdWriterFix accepts the nil options the protocol's client passes to
// StandardWriter, which hclog's own logger dereferences.
type stdWriterFix struct{ hclog.Logger }

func (l stdWriterFix) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	if opts == nil {
		opts = &hclog.StandardLoggerOptions{}
	}
	return l.Logger.StandardWriter(opts)
}
