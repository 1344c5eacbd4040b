package httpsink_test

import (
	"context"
	"testing"

	httpsink "github.com/connkit/connkit/examples/http"
	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/sdktest"
)

// The conformance suite, against an endpoint on loopback that keeps what
// it is sent: what it received is what the round trip reads back.
func TestDestination(t *testing.T) {
	e := newEndpoint(t, nil)
	sdktest.Destination(t, sdktest.DestinationSuite{
		Connector: httpsink.Connector,
		Config:    map[string]string{"url": e.URL + "/records"},
		ReadBack:  func(context.Context) ([]sdk.Record, error) { return e.received(), nil },
		// A POST the server took but whose response was lost, to a crash
		// or a dropped connection, is sent again: the server has those
		// records twice. The crash check reports them.
		Delivery: sdktest.AtLeastOnce,
		Invalid: []sdktest.Invalid{
			{Config: map[string]string{"url": "ftp://example.com/records"}, Param: "url"},
			{Config: map[string]string{"url": "example.com/records"}, Param: "url"},
			{Config: map[string]string{"url": "http://"}, Param: "url"},
		},
		Plugin: sdktest.Plugin("connkit-http", "./cmd/connkit-http"),
	})
}
