// Package served lets the test kit (package sdktest) serve a connector
// exactly as a plugin binary does, without a public API for it: package
// sdk sets Connector when it is initialised.
package served

import "github.com/connkit/connkit/internal/plugin"

// Connector returns what the plugin server serves for c, an sdk.Connector
// (which this package cannot name: sdk imports it), or why c is not valid.
var Connector func(c any) (plugin.Connector, error)
