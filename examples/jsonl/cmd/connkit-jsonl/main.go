// Command connkit-jsonl is the jsonl connector as a Conduit plugin.
package main

import (
	"github.com/connkit/connkit/examples/jsonl"
	"github.com/connkit/connkit/sdk"
)

func main() { sdk.Serve(jsonl.Connector) }
