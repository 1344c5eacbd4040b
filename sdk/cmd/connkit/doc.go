// Command connkit starts a new Conduit connector built with connkit, and
// releases it.
//
//	go run ./sdk/cmd/connkit new NAME [flags]                                  (in a connkit checkout)
//	go run github.com/connkit/connkit/sdk/cmd/connkit@VERSION new NAME [flags] (once connkit is published)
//	go run github.com/connkit/connkit/sdk/cmd/connkit release -version vX.Y.Z  (in a connector's module)
//
// connkit -h, -help or help prints the usage; a missing or unknown
// subcommand is an error.
//
// # New
//
// connkit new NAME writes a Go module with a working connector: a source
// that reads lines from a file and a destination that appends records to
// a file as JSON lines, a config struct for each, cmd/NAME serving them as
// a plugin, connkit's conformance test on both, a Makefile (build, test,
// spec, readme, run, clean), a README with the parameters and a pipeline
// for Conduit, a .gitignore, .ci/run, and GitHub workflows: test.yml
// (gofmt, go vet, the tests under -race, on every push and pull request)
// and release.yml (see Release). It then runs go mod tidy there. make test
// passes as generated; the connector is the place to start replacing the
// file with a system.
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
//
// # Release
//
// connkit release, run in a connector's module (the current directory, or
// one below its root), builds the connector's command for linux, darwin
// and windows, each on amd64 and arm64: go build -trimpath with
// CGO_ENABLED=0. Into the output directory, dist/ by default, it writes
//
//   - an archive per platform, NAME_VERSION_OS_ARCH.tar.gz: NAME is the
//     command's directory name, VERSION the release's without its v (as
//     the registry's artifacts are named: lines_0.1.0_linux_amd64.tar.gz).
//     It is a gzipped tar of one entry, the binary (NAME, or NAME.exe on
//     windows) as a regular file at the archive's root, mode 0755, with a
//     fixed time and owner: what Conduit's registry installs, as
//     conduit-connector-NAME_VERSION in its connectors directory. The
//     same source and Go toolchain make the same archive, byte for byte.
//   - checksums.txt: "SHA256  FILE" for each archive, sorted, as sha256sum
//     prints them.
//   - index.json: the connector's entry for Conduit's registry index
//     (schema version 1, an element of its payload.connectors), with this
//     release as its one version: each archive's address on the GitHub
//     release of the tag, its sha256, size and Sigstore bundle
//     (ARCHIVE.sigstore.json), the SLSA provenance
//     (multiple.intoto.jsonl), the signer the registry pins (the
//     repository's .github/workflows/release.yml at a tag vX.Y.Z, signing
//     through GitHub's OIDC issuer), Conduit v0.14.0 as the least it runs
//     in, and as minProtocolVersion the version of
//     github.com/conduitio/conduit-connector-protocol the module builds
//     with. Its description is the plugin's summary, from its
//     specification.
//
// It prints each file it wrote. Archives of an earlier release in the
// output directory are removed first. Each binary's variable version in
// the module's root package, where connkit new has the Connector take its
// Version from, is set to the release's (-ldflags -X). It warns if the
// plugin's specification still gives another name or version: Conduit
// knows a plugin by those.
//
// In a git checkout the go command stamps each binary with the commit and
// whether the checkout has changes. connkit release builds every binary
// before it writes any file, but an output directory inside the checkout
// that git does not ignore is a change to the next release's builds, and
// their archives differ: the .gitignore that connkit new writes ignores
// dist/.
//
//	-version vX.Y.Z   the release's version, the tag it is released from (required);
//	                  pre-release and build parts are refused: the registry admits
//	                  tags vMAJOR.MINOR.PATCH only
//	-cmd PACKAGE      the connector's command, relative to the module's root;
//	                  default the only directory in cmd/
//	-out DIR          where to write, relative to the module's root; default dist
//	                  (an earlier release's archives there are removed)
//	-platforms LIST   comma-separated OS/ARCH to build, of the six; default all
//	-repository URL   the GitHub repository, https://github.com/OWNER/REPO;
//	                  default from a module path github.com/OWNER/REPO[/...], and
//	                  required with any other module path
//
// To publish a release of a module that connkit new wrote, push a tag:
//
//	git tag v0.1.0 && git push origin v0.1.0
//
// Its .github/workflows/release.yml runs connkit release for the tag,
// signs each archive keylessly with cosign (sign-blob, a Sigstore bundle
// per archive), uploads the archives, bundles, checksums.txt and
// index.json to the GitHub release of the tag, and has the SLSA generator
// add multiple.intoto.jsonl. Then submit index.json's entry to Conduit's
// registry index. The workflow's file name is part of the signer the entry
// pins: keep it release.yml.
package main
