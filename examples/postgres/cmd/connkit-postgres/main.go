// Command connkit-postgres is the postgres connector as a Conduit plugin.
package main

import (
	"github.com/connkit/connkit/examples/postgres"
	"github.com/connkit/connkit/sdk"
)

func main() { sdk.Serve(postgres.Connector) }
