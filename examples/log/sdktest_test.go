package log_test

import (
	"testing"

	"github.com/connkit/connkit/examples/log"
	"github.com/connkit/connkit/sdk/sdktest"
)

func TestConformance(t *testing.T) {
	sdktest.Destination(t, sdktest.DestinationSuite{
		Connector: log.Connector,
		Config:    map[string]string{"level": "trace"},
		Plugin:    sdktest.Plugin("connkit-log", "./cmd/connkit-log"),
	})
}
