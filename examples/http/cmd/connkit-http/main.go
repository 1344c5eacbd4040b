// Command connkit-http is the http connector as a Conduit plugin.
package main

import (
	httpsink "github.com/connkit/connkit/examples/http"
	"github.com/connkit/connkit/sdk"
)

func main() { sdk.Serve(httpsink.Connector) }
