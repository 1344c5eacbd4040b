package sdk_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	clientv2 "github.com/conduitio/conduit-connector-protocol/pconnector/v2/client"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
)

// serve serves srv on an in-memory listener until the test ends and
// returns a client connection to it.
func serve(t *testing.T, srv *sdk.Server) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///server",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve after Stop: %v", err)
		}
	})
	return conn
}

func TestNewServerRefusesWhatIsNotValid(t *testing.T) {
	is := is.New(t)
	_, err := sdk.NewServer(sdk.Connector{Version: "v0.1.0", Destination: sdk.NewDestination(func(struct{}) (*Counter, error) { return &Counter{}, nil })})
	is.True(err != nil && strings.Contains(err.Error(), "Connector.Name is empty")) // the Connector's own error
	_, err = sdk.NewServer(sdk.Connector{Name: "counter", Version: "v0.1.0", Destination: sdk.NewDestination(func(struct{}) (*Counter, error) { return &Counter{}, nil })}, sdk.ServerLogger(nil))
	is.True(err != nil && strings.Contains(err.Error(), "ServerLogger")) // names the option
}

// opening is a destination that hands over what the context of its Open
// carries.
type opening struct {
	Counter
	carried chan<- carried
}

type carried struct {
	log           *slog.Logger
	maxRecordSize int
}

func (o *opening) Open(ctx context.Context) error {
	o.carried <- carried{sdk.Logger(ctx), sdk.MaxRecordSize(ctx)}
	return nil
}

// TestServerServesOneDestination: Configure, Open and Teardown reach the
// connector over the protocol, whose calls carry the Server's logger and
// Conduit's record size limit.
func TestServerServesOneDestination(t *testing.T) {
	is := is.New(t)
	log := slog.New(slog.DiscardHandler)
	opened := make(chan carried, 1)
	srv, err := sdk.NewServer(sdk.Connector{
		Name:        "opening",
		Version:     "v0.1.0",
		Destination: sdk.NewDestination(func(struct{}) (*opening, error) { return &opening{carried: opened}, nil }),
	}, sdk.ServerLogger(log))
	is.NoErr(err)
	dst := clientv2.NewDestinationPluginClient(serve(t, srv))
	ctx := t.Context()
	_, err = dst.Configure(ctx, pconnector.DestinationConfigureRequest{Config: map[string]string{}})
	is.NoErr(err)
	_, err = dst.Open(ctx, pconnector.DestinationOpenRequest{})
	is.NoErr(err)
	_, err = dst.Teardown(ctx, pconnector.DestinationTeardownRequest{})
	is.NoErr(err)
	got := <-opened
	is.True(got.log == log)            // the Server's logger
	is.Equal(got.maxRecordSize, 4<<20) // Conduit's default limit

	_, err = clientv2.NewSourcePluginClient(serve(t, srv)).Configure(ctx, pconnector.SourceConfigureRequest{Config: map[string]string{}})
	is.True(err != nil) // the connector plays no source
}

// panicking is a destination whose Open panics, as a connector with a bug
// does.
type panicking struct {
	Counter
	seen map[string]bool
}

func (p *panicking) Open(context.Context) error {
	p.seen["opened"] = true // a nil map
	return nil
}

// TestServerSaysWhereTheConnectorPanicked: a panic in connector code
// fails the call that panicked, naming what it panicked with and the
// connector's own function, file and line; the server goes on serving.
func TestServerSaysWhereTheConnectorPanicked(t *testing.T) {
	is := is.New(t)
	srv, err := sdk.NewServer(sdk.Connector{
		Name: "panicking", Version: "v0.1.0",
		Destination: sdk.NewDestination(func(struct{}) (*panicking, error) { return &panicking{}, nil }),
	}, sdk.ServerLogger(slog.New(slog.DiscardHandler)))
	is.NoErr(err)
	dst := clientv2.NewDestinationPluginClient(serve(t, srv))
	_, err = dst.Configure(t.Context(), pconnector.DestinationConfigureRequest{Config: map[string]string{}})
	is.NoErr(err)
	_, err = dst.Open(t.Context(), pconnector.DestinationOpenRequest{})
	is.True(err != nil)
	for _, want := range []string{"connector panicked in Open: assignment to entry in nil map at ", "sdk_test.(*panicking).Open (", "server_test.go:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open's error %q does not contain %q", err, want)
		}
	}
	_, err = dst.Teardown(t.Context(), pconnector.DestinationTeardownRequest{})
	is.NoErr(err) // still serving
}

func TestServeAfterStopFails(t *testing.T) {
	is := is.New(t)
	srv, err := sdk.NewServer(sdk.Connector{Name: "counter", Version: "v0.1.0", Destination: sdk.NewDestination(func(struct{}) (*Counter, error) { return &Counter{}, nil })})
	is.NoErr(err)
	srv.GracefulStop()
	is.True(srv.Serve(bufconn.Listen(1<<10)) != nil)
}
