package sdk

import (
	"errors"
	"log/slog"
	"net"

	"github.com/connkit/connkit/internal/plugin"
	"google.golang.org/grpc"
)

// Server serves a [Connector] over gRPC inside the process that makes it,
// on listeners its caller gives: the specifier, source and destination
// services of the plugin protocol's version 2, with the plugin server
// that [Serve] runs in a plugin process, but without go-plugin's
// handshake. A client dials a listener with gRPC and drives the connector
// with the protocol's own clients (package
// github.com/conduitio/conduit-connector-protocol/pconnector/v2/client),
// as Conduit does: a test reaches a connector through a Server as one
// reaches an http.Handler through net/http/httptest's. Package sdktest
// runs its in-process checks through Servers.
//
// Like a plugin process, a Server has one source instance and one
// destination instance, which the calls of every connection share: make
// a Server for each instance a test needs. The context of every call
// carries the logger ([ServerLogger]) and Conduit's default record size
// limit ([MaxRecordSize]); there is no schema service, so records carry
// their schemas only if a test encodes them itself.
type Server struct {
	grpc *grpc.Server
}

// NewServer returns a Server of c, or an error if c is not valid (see
// [Connector.Specification]) or an option is not.
func NewServer(c Connector, opts ...ServerOption) (*Server, error) {
	spec, err := c.Specification()
	if err != nil {
		return nil, err
	}
	s := serverSettings{log: slog.Default()}
	for _, o := range opts {
		o.apply(&s)
	}
	if s.log == nil {
		return nil, errors.New("sdk: ServerLogger: the logger is nil")
	}
	g := grpc.NewServer(plugin.ServerOptions(plugin.Settings{MaxReceiveSize: plugin.DefaultMaxReceiveSize}, s.log)...)
	plugin.Register(g, c.factory(spec, ""), s.log)
	return &Server{grpc: g}, nil
}

// Serve accepts connections on lis and serves them until Stop or
// GracefulStop is called, or lis fails; it closes lis when it returns. It
// returns nil once stopped, else lis's error; called after a stop, it
// returns an error at once. Calls of Serve with several listeners may run
// together.
func (s *Server) Serve(lis net.Listener) error { return s.grpc.Serve(lis) }

// Stop closes the listeners and connections at once, which ends the calls
// and Run streams in progress. It does not tear the connector down: as
// from Conduit, Teardown comes over the protocol.
func (s *Server) Stop() { s.grpc.Stop() }

// GracefulStop closes the listeners, and the connections once the calls
// and Run streams in progress on them have ended: it returns then.
func (s *Server) GracefulStop() { s.grpc.GracefulStop() }

// A ServerOption sets how a [Server] serves.
type ServerOption interface{ apply(*serverSettings) }

// serverSettings are what a Server's options set.
type serverSettings struct {
	log *slog.Logger
}

type serverOption func(*serverSettings)

func (o serverOption) apply(s *serverSettings) { o(s) }

// ServerLogger sets the logger that connector code finds in the context
// of every call ([Logger]), and the plugin server logs to; the default is
// [slog.Default]. A nil logger makes NewServer fail.
func ServerLogger(l *slog.Logger) ServerOption {
	return serverOption(func(s *serverSettings) { s.log = l })
}
