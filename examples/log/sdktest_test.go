package log_test

import (
	"testing"

	"github.com/connkit/connkit/examples/log"
	"github.com/connkit/connkit/sdk/sdktest"
)

// The log destination keeps nothing it could read back: the round-trip
// checks and the crash check (Crash/Write), which compare what the system
// holds with what was acknowledged, are skipped for want of a ReadBack.
func TestConformance(t *testing.T) {
	sdktest.Destination(t, sdktest.DestinationSuite{
		Connector: log.Connector,
		Config:    map[string]string{"level": "trace"},
		Plugin:    sdktest.Plugin("connkit-log", "./cmd/connkit-log"),
	})
}
