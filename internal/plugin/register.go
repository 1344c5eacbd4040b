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
// host run a connector inside its own process over real gRPC (the test kit
// does); give s the options of [ServerOptions]. Like a plugin process, s
// serves one source and one destination instance.
func Register(s *grpc.Server, c Connector, log *slog.Logger) {
	connectorv2.RegisterSpecifierPluginServer(s, serverv2.NewSpecifierPluginServer(specifier(c.Spec)))
	// As Serve does for version 2: the Run streams encode and decode records.
	registerSourceV2(s, newSourceServer(sourceOrNot(c.NewSource), log), DefaultMaxReceiveSize)
	registerDestinationV2(s, newDestinationServer(destinationOrNot(c.NewDestination), log), DefaultMaxReceiveSize)
}

// serverOnly is the side of a go-plugin plugin that a plugin process has:
// it serves, and is nobody's client.
type serverOnly struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (serverOnly) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("plugin: a plugin serves, it has no client")
}

// destinationV2 serves protocol version 2's destination service with the
// protocol's own adapter, except for Run, whose records it decodes with a
// recordDecoder.
type destinationV2 struct {
	serverOnly
	newDestination func() pconnector.DestinationPlugin
	maxMessage     int
}

func (p destinationV2) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	registerDestinationV2(s, p.newDestination(), p.maxMessage)
	return nil
}

// registerDestinationV2 registers impl on s; no message it sends is larger
// than maxMessage bytes.
func registerDestinationV2(s grpc.ServiceRegistrar, impl pconnector.DestinationPlugin, maxMessage int) {
	connectorv2.RegisterDestinationPluginServer(s, destinationServiceV2{serverv2.NewDestinationPluginServer(impl), impl, maxMessage})
}

// sourceV2 serves protocol version 2's source service with the protocol's
// own adapter, except for Run, whose records it encodes itself.
type sourceV2 struct {
	serverOnly
	newSource  func() pconnector.SourcePlugin
	maxMessage int
}

func (p sourceV2) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	registerSourceV2(s, p.newSource(), p.maxMessage)
	return nil
}

// registerSourceV2 registers impl on s; no message it sends is larger than
// maxMessage bytes, except one carrying a single record larger than that.
func registerSourceV2(s grpc.ServiceRegistrar, impl pconnector.SourcePlugin, maxMessage int) {
	connectorv2.RegisterSourcePluginServer(s, sourceServiceV2{serverv2.NewSourcePluginServer(impl), impl, maxMessage})
}
