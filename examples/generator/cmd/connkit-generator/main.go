// Command connkit-generator is the generator connector as a Conduit plugin.
package main

import (
	"github.com/connkit/connkit/examples/generator"
	"github.com/connkit/connkit/sdk"
)

func main() { sdk.Serve(generator.Connector) }
