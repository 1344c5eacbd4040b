// Command connkit-postgres is the postgres connector as a Conduit plugin.
package main

import (
	"os"
	"runtime/debug"

	"github.com/connkit/connkit/examples/postgres"
	"github.com/connkit/connkit/sdk"
)

func main() {
	// The live heap is little more than the batches in flight, and records
	// are short-lived: collecting garbage less often cut the plugin's
	// processor time per row by about a quarter at batch sizes of 1000 and
	// more (`bench postgres`, GOGC 100 against 400). GOGC, when set, wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	sdk.Serve(postgres.Connector)
}
