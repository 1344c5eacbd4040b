// Command connkit-file is the file connector as a Conduit plugin.
package main

import (
	"github.com/connkit/connkit/examples/file"
	"github.com/connkit/connkit/sdk"
)

func main() { sdk.Serve(file.Connector) }
