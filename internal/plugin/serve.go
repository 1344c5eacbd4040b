package plugin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/conduitio/conduit-connector-protocol/pconnector/server"
	v2 "github.com/conduitio/conduit-connector-protocol/pconnector/v2"
	"github.com/connkit/connkit/internal/callctx"
	"github.com/connkit/connkit/internal/logging"
	"github.com/connkit/connkit/internal/quietconn"
	"github.com/connkit/connkit/internal/schema"
	"github.com/connkit/connkit/internal/wire"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Settings are what Conduit tells a plugin through its environment.
type Settings struct {
	LogLevel       slog.Level
	MaxReceiveSize int // bytes; the gRPC limit for one incoming message
	// GCPercent, if not 0, is the garbage collector's target Serve sets,
	// as GOGC would.
	GCPercent int
	// Schemas, if set, are the codecs of Conduit's schema service, which
	// the schema middleware finds in the context of every call (see
	// schema.FromContext).
	Schemas *schema.Codecs
	// HostTLS is whether the host asked for mutual TLS, which go-plugin
	// then sets up (Conduit does not).
	HostTLS bool
}

// DefaultMaxReceiveSize is Conduit's default record size limit.
const DefaultMaxReceiveSize = server.DefaultMaxReceiveRecordSize

// DefaultGCPercent is the garbage collector's target in a plugin whose
// environment sets no GOGC. A plugin holds little (see the hold bound) and
// most of what it allocates lives for one batch, so at Go's default of 100
// it collects every few MB allocated, and those collections cost more than
// the memory they save: against 100, 200 moves 1.1-1.4x the records over
// the protocol at a lower ack p50, for a fifth to a quarter more peak RSS.
const DefaultGCPercent = 200

// envPluginClientCert is where go-plugin's host puts its certificate when
// it asks for mutual TLS.
const envPluginClientCert = "PLUGIN_CLIENT_CERT"

// settingsFromEnv reads the plugin's settings with getenv. Missing or
// malformed values fall back to defaults: when Conduit only asks a plugin
// for its specification, it sets no log level, and nothing may fail then.
// The returned warnings say which values were ignored.
func settingsFromEnv(getenv func(string) string) (s Settings, warnings []string) {
	s = Settings{LogLevel: logging.ParseLevel(getenv(pconnector.EnvConduitConnectorLogLevel)), MaxReceiveSize: DefaultMaxReceiveSize}
	if v := getenv(pconnector.EnvConduitConnectorMaxReceiveRecordSize); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			warnings = append(warnings, pconnector.EnvConduitConnectorMaxReceiveRecordSize+"="+strconv.Quote(v)+" is not a positive integer; using "+strconv.Itoa(DefaultMaxReceiveSize))
		} else {
			s.MaxReceiveSize = n
		}
	}
	s.HostTLS = getenv(envPluginClientCert) != ""
	if getenv("GOGC") == "" { // the runtime has applied one that is set
		s.GCPercent = DefaultGCPercent
	}
	return s, warnings
}

// Serve serves c to Conduit over go-plugin until Conduit ends the plugin,
// or until the process that started it has exited: then it tears the
// connectors down and returns nil, so that nothing a connector holds
// outlives its host. It takes its settings from what Conduit puts in the
// environment, which getenv reads: the log level, the record size limit
// and the schema service. Logs go to stderr as JSON lines Conduit re-logs
// at their level.
func Serve(c Factory, getenv func(string) string, stderr io.Writer) error {
	s, warnings := settingsFromEnv(getenv)
	for _, w := range warnings {
		fmt.Fprintln(stderr, w)
	}
	schemas, closeSchemas, err := schema.FromEnv(getenv)
	if err != nil {
		return err
	}
	defer closeSchemas.Close()
	s.Schemas = schema.NewCodecs(schemas)
	return serve(c, s, stderr, hostConnectTimeout)
}

// serve is Serve with the time the host has to connect.
func serve(c Factory, s Settings, stderr io.Writer, connectTimeout time.Duration) error {
	log := slog.New(logging.NewHandler(stderr, s.LogLevel))
	if s.GCPercent != 0 {
		debug.SetGCPercent(s.GCPercent)
	}
	// Conduit reads the plugin's stderr through a pipe. Once Conduit is
	// gone, a write to it would end the process with SIGPIPE, in the
	// middle of whatever logged, before the connectors are torn down;
	// ignored, it fails with EPIPE and the line is lost.
	signal.Ignore(syscall.SIGPIPE)
	live := &liveConnectors{}
	newSource := func() pconnector.SourcePlugin { return live.source(newSourceServer(c, log)) }
	newDestination := func() pconnector.DestinationPlugin {
		d := newDestinationServer(c, log)
		d.setProcs = runtime.GOMAXPROCS // the process is the connector's alone
		return live.destination(d)
	}
	conns := newConnections()
	served := make(chan error, 1)
	go func() {
		served <- server.Serve(
			func() pconnector.SpecifierPlugin { return specifier{c} },
			newSource,
			newDestination,
			server.WithGRPCServerOptions(ServerOptions(s, log)...),
			recordsOnTheWireV2(newSource, newDestination, s.MaxReceiveSize),
			serveOption(func(cfg *goplugin.ServeConfig) error {
				newServer := cfg.GRPCServer
				opts := []grpc.ServerOption{grpc.StatsHandler(conns)}
				if !s.HostTLS && cfg.TLSProvider == nil {
					// Without TLS, go-plugin sets no credentials of its own.
					opts = append(opts, grpc.Creds(quietSockets{insecure.NewCredentials()}))
				}
				cfg.GRPCServer = live.grpcServer(func(more []grpc.ServerOption) *grpc.Server {
					return newServer(append(more, opts...))
				})
				return nil
			}),
		)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hostGone := make(chan string, 2)
	watch := func(gone func(context.Context) string) {
		go func() {
			if why := gone(ctx); why != "" {
				hostGone <- why
			}
		}()
	}
	watch(func(ctx context.Context) string { return noHostWithin(ctx, conns, connectTimeout) })
	if parent := watchParent(parentAtStart, os.Getppid); parent != nil {
		watch(parent)
	} else {
		log.Debug("the plugin's parent is pid 1: it cannot tell when its host exits, once connected")
	}
	return untilHostGone(s.context(context.Background(), log), served, hostGone, live, log, orphanTeardown)
}

// recordsOnTheWireV2 serves protocol version 2, the one Conduit speaks,
// with Run streams that encode a source's records and decode a
// destination's themselves, and send no message larger than maxMessage
// (what Conduit accepts).
func recordsOnTheWireV2(newSource func() pconnector.SourcePlugin, newDestination func() pconnector.DestinationPlugin, maxMessage int) server.Option {
	return serveOption(func(cfg *goplugin.ServeConfig) error {
		set, ok := cfg.VersionedPlugins[v2.Version]
		if !ok {
			return fmt.Errorf("plugin: the protocol serves no version %d", v2.Version)
		}
		set["source"] = service{register: func(s *grpc.Server) { registerSource(s, newSource(), maxMessage) }}
		set["destination"] = service{register: func(s *grpc.Server) { registerDestination(s, newDestination(), maxMessage) }}
		return nil
	})
}

type serveOption func(*goplugin.ServeConfig) error

func (f serveOption) ApplyOption(cfg *goplugin.ServeConfig) error { return f(cfg) }

// windowSize is gRPC's flow-control window, per stream and per connection:
// what Conduit may send ahead of what a Run has taken, on top of what the
// Run holds (see holdFor and aheadOf). What waits in it is latency: in the
// default engine Conduit sends as fast as the window lets it, so behind a
// destination slower than its source a full window queues its size in
// records. 0 leaves it to gRPC's bandwidth-delay estimate, which starts at
// gRPC's floor of 64 KiB and grows a window only when the reader takes
// most of it within a round trip: behind a slow destination it stays at
// the floor, behind a fast one it grows. Measured side by side against the
// incumbent (bench conduit, builtin generator → Postgres, sdk.batch.size
// 1): a fixed 256 KiB queued 220 ms (incumbent 145 ms), 64 KiB 84 ms, the
// estimate 83 ms; in bench sweep a fixed 64 KiB fell to 1.83x the
// incumbent (10 KiB records, batches of 1000), where the estimate kept
// 2.57x to 3.54x in every cell.
const (
	windowSize = 0
	bufferSize = 256 << 10
)

// ServerOptions are the gRPC options a plugin server needs: the receive size
// limit, and interceptors that hand log and the schema registry to
// connector code through the context of every call.
func ServerOptions(s Settings, log *slog.Logger) []grpc.ServerOption {
	return serverOptions(s, log, windowSize)
}

// serverOptions are ServerOptions with flow-control windows of window
// bytes, or gRPC's bandwidth-delay estimate if window is 0.
func serverOptions(s Settings, log *slog.Logger, window int32) []grpc.ServerOption {
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(s.MaxReceiveSize),
		grpc.ForceServerCodecV2(wire.NewCodec()), // protobuf, except that the Run streams' messages encode and decode themselves
		grpc.ReadBufferSize(bufferSize),
		grpc.WriteBufferSize(bufferSize),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			return next(s.context(ctx, log), req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, next grpc.StreamHandler) error {
			return next(srv, &loggingStream{ServerStream: ss, ctx: s.context(ss.Context(), log)})
		}),
	}
	if window > 0 {
		opts = append(opts, grpc.InitialWindowSize(window), grpc.InitialConnWindowSize(window))
	}
	return opts
}

// context returns ctx carrying what connector code takes from it: the
// logger, the record size limit and the schemas.
func (s Settings) context(ctx context.Context, log *slog.Logger) context.Context {
	ctx = callctx.WithLogger(ctx, log)
	if s.MaxReceiveSize > 0 {
		ctx = callctx.WithMaxRecordSize(ctx, s.MaxReceiveSize)
	}
	if s.Schemas != nil {
		ctx = schema.NewContext(ctx, s.Schemas)
	}
	return ctx
}

// quietSockets are transport credentials whose connections read and write
// quietly (see package quietconn): a plugin that handles one record at a
// time goes idle a few times a record, and each of its first reads and
// writes after that would wake the runtime's monitor thread.
type quietSockets struct {
	credentials.TransportCredentials
}

func (q quietSockets) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return q.TransportCredentials.ServerHandshake(quietconn.Wrap(c))
}

func (q quietSockets) Clone() credentials.TransportCredentials {
	return quietSockets{q.TransportCredentials.Clone()}
}

type loggingStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *loggingStream) Context() context.Context { return s.ctx }
