// Command connkit-log is the log connector as a Conduit plugin.
package main

import (
	"github.com/connkit/connkit/examples/log"
	"github.com/connkit/connkit/sdk"
)

func main() { sdk.Serve(log.Connector) }
