// Command connkit starts a new Conduit connector built with connkit.
//
//	go run github.com/connkit/connkit/sdk/cmd/connkit@latest new NAME [flags]
//
// (or without @latest inside a module that requires connkit) writes a Go
// module in ./NAME with a working connector: a source that reads lines
// from a file and a destination that appends records to a file as JSON
// lines, a config struct for each, cmd/NAME serving them as a plugin,
// connkit's conformance test on both, a Makefile (build, test, spec), a
// README with the parameters and a pipeline for Conduit, and .ci/run. It
// then runs go mod tidy there. make test passes as generated; the
// connector is the place to start replacing the file with a system.
//
// # Flags
//
//	-module PATH   the module path; default NAME
//	-dir DIR       where to write it, a missing or empty directory; default ./NAME
//	-source        only a source
//	-destination   only a destination
//	-connkit DIR   require connkit from a local checkout (a replace directive)
//
// NAME is the connector's name (standalone:NAME in a pipeline), its Go
// package and its command: lower-case letters, digits and underscores,
// starting with a letter, not a Go keyword.
//
// The module requires connkit at the version this command was built from.
// A command built from a checkout (version "(devel)") does not know one:
// -connkit names the checkout instead.
package main
