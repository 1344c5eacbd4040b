package plugin

import (
	"log/slog"

	serverv2 "github.com/conduitio/conduit-connector-protocol/pconnector/v2/server"
	connectorv2 "github.com/conduitio/conduit-connector-protocol/proto/connector/v2"
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
