// Command connkit starts a new Conduit connector built with connkit.
//
//	go run ./sdk/cmd/connkit new NAME [flags]                                  (in a connkit checkout)
//	go run github.com/connkit/connkit/sdk/cmd/connkit@VERSION new NAME [flags] (once connkit is published)
//
// writes a Go module with a working connector: a source that reads lines
// from a file and a destination that appends records to a file as JSON
// lines, a config struct for each, cmd/NAME serving them as a plugin,
// connkit's conformance test on both, a Makefile (build, test, spec,
// readme, run, clean), a README with the parameters and a pipeline for
// Conduit, a .gitignore, and .ci/run. It then runs go mod tidy there. make test passes as generated; the
// connector is the place to start replacing the file with a system.
//
// # Flags
//
//	-module PATH   the module path; default NAME
//	-dir DIR       where to write it, a missing or empty directory; default ./NAME,
//	               in the current directory
//	-source        only a source
//	-destination   only a destination
//	-connkit DIR   require connkit from a local checkout (a replace directive);
//	               default: the checkout the command runs in, if any
//
// NAME is the connector's name (standalone:NAME in a pipeline), its Go
// package and its command: lower-case letters, digits and underscores,
// starting with a letter, not a Go keyword.
//
// The module requires connkit at the version this command was built from.
// A command built from a checkout (version "(devel)") does not know one:
// the module requires the checkout instead, with a replace directive: the
// checkout the command runs in, or the one -connkit names.
package main
