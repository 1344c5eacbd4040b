// Package plugin is the server side of Conduit's connector protocol: it
// adapts a connector's Source or Destination to the protocol's plugin
// interfaces, tracks positions and acknowledgements, and serves them through
// go-plugin the way Conduit launches standalone connectors.
//
// The interfaces here mirror the public ones in package sdk method for
// method, so an sdk value satisfies them without this package importing sdk.
package plugin
