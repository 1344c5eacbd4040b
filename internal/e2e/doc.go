// Package e2e tests connkit's plugins the way users run them: the plugin
// binaries launched over the real protocol by the protocol's own client,
// and, when CONDUIT_BIN names a Conduit server binary, inside real Conduit.
//
// The example binaries are taken from CONNKIT_BIN (a directory) or built
// into a temporary directory.
package e2e
