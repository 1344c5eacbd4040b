package plugin

import (
	"context"
	"errors"
	"log/slog"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	serverv2 "github.com/conduitio/conduit-connector-protocol/pconnector/v2/server"
	connectorv2 "github.com/conduitio/conduit-connector-protocol/proto/connector/v2"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// Register registers c's specifier, source and destination on s, speaking
// protocol version 2 as a plugin process does after its handshake. It lets a
// host run a connector inside its own process over real gRPC (package
// sdk's Server does); give s the options of [ServerOptions]. Like a plugin process, s
// serves one source and one destination instance.
func Register(s *grpc.Server, c Factory, log *slog.Logger) {
	connectorv2.RegisterSpecifierPluginServer(s, serverv2.NewSpecifierPluginServer(specifier{c}))
	registerSource(s, newSourceServer(c, log), DefaultMaxReceiveSize)
	registerDestination(s, newDestinationServer(c, log), DefaultMaxReceiveSize)
}

type specifier struct{ c Factory }

func (s specifier) Specify(context.Context, pconnector.SpecifierSpecifyRequest) (pconnector.SpecifierSpecifyResponse, error) {
	return pconnector.SpecifierSpecifyResponse{Specification: s.c.Specification()}, nil
}

// registerSource registers impl on s with the protocol's own adapter,
// except for Run, whose stream encodes records itself (see
// sourceRunStream); no message it sends is larger than maxMessage bytes,
// except one carrying a single record larger than that.
func registerSource(s grpc.ServiceRegistrar, impl pconnector.SourcePlugin, maxMessage int) {
	connectorv2.RegisterSourcePluginServer(s, sourceService{serverv2.NewSourcePluginServer(impl), impl, maxMessage})
}

// registerDestination registers impl on s with the protocol's own
// adapter, except for Run, whose stream decodes records itself (see
// destinationRunStream); no message it sends is larger than maxMessage
// bytes.
func registerDestination(s grpc.ServiceRegistrar, impl pconnector.DestinationPlugin, maxMessage int) {
	connectorv2.RegisterDestinationPluginServer(s, destinationService{serverv2.NewDestinationPluginServer(impl), impl, maxMessage})
}

// service is one service of protocol version 2 as go-plugin serves it in a
// plugin process: register registers it on the process's gRPC server.
type service struct {
	goplugin.NetRPCUnsupportedPlugin
	register func(*grpc.Server)
}

func (p service) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	p.register(s)
	return nil
}

func (service) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("plugin: a plugin serves, it has no client")
}
