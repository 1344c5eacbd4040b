package plugin

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// servePluginEnv, set, makes the test binary a plugin process that serves
// an empty connector, giving its host a second to connect.
const servePluginEnv = "CONNKIT_TEST_SERVE_PLUGIN"

func TestMain(m *testing.M) {
	if os.Getenv(servePluginEnv) != "" {
		if err := serve(testFactory{}, Settings{MaxReceiveSize: DefaultMaxReceiveSize}, os.Stderr, time.Second); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
