package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// releaseOptions is what `connkit release` does.
type releaseOptions struct {
	Version    string // the release's version, vMAJOR.MINOR.PATCH
	Cmd        string // the connector's command, a package path relative to the module's root
	Out        string // where the files go, relative to the module's root unless absolute
	Repository string // https://github.com/OWNER/REPO; empty: derived from the module path
	platforms  []platform

	// Set by tests only: where the release runs, instead of the current
	// directory.
	dir string
}

// releaseVersion is a version `connkit release` accepts: the tags that
// the scaffold's release workflow runs for and that the registry entry's
// identity pattern admits.
var releaseVersion = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// parseReleaseOptions parses the arguments of `connkit release` and checks
// them.
func parseReleaseOptions(args []string, stderr io.Writer) (releaseOptions, error) {
	opts := releaseOptions{platforms: releasePlatforms}
	fs := flag.NewFlagSet("connkit release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	fs.StringVar(&opts.Version, "version", "", "the release's `version`, vMAJOR.MINOR.PATCH: the tag it is released from (required)")
	fs.StringVar(&opts.Cmd, "cmd", "", "the connector's command, a `package` relative to the module's root; default the only directory in cmd/")
	fs.StringVar(&opts.Out, "out", "dist", "the `directory` to write into, relative to the module's root")
	fs.StringVar(&opts.Repository, "repository", "", "the `URL` of the connector's GitHub repository, https://github.com/OWNER/REPO; default from a module path github.com/OWNER/REPO")
	platforms := fs.String("platforms", platformList(releasePlatforms), "comma-separated OS/ARCH `list` to build, each one of the default's: fewer for a look at one archive before a release")
	if err := fs.Parse(args); err != nil {
		return releaseOptions{}, err
	}
	var err error
	if opts.platforms, err = parsePlatforms(*platforms); err != nil {
		return releaseOptions{}, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return releaseOptions{}, fmt.Errorf("connkit release takes flags only, got the arguments %q", fs.Args())
	}
	if !releaseVersion.MatchString(opts.Version) {
		return releaseOptions{}, fmt.Errorf("-version %q: expected a semantic version with a leading v, vMAJOR.MINOR.PATCH such as v0.1.0, without pre-release or build parts: the tag of the release, as the registry admits it", opts.Version)
	}
	if opts.Repository != "" {
		if _, err := parseRepository(opts.Repository); err != nil {
			return releaseOptions{}, err
		}
	}
	return opts, nil
}

// release is `connkit release`: it builds the connector's command for
// each platform into an archive, then writes checksums.txt and index.json
// beside the archives, and says what it wrote on stdout.
func release(args []string, stdout, stderr io.Writer) error {
	opts, err := parseReleaseOptions(args, stderr)
	if err != nil {
		return err
	}
	return releaseConnector(opts, stdout, stderr)
}

// releaseConnector makes the release that opts describe: see [release].
func releaseConnector(opts releaseOptions, stdout, stderr io.Writer) error {
	plan, err := planRelease(opts)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "connkit-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.MkdirAll(plan.out, 0o755); err != nil {
		return err
	}
	// The output directory holds one release: an earlier one's archives
	// would be uploaded beside this one's.
	stale, _ := filepath.Glob(filepath.Join(plan.out, plan.name+"_*.tar.gz"))
	for _, f := range stale {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	// Every build before any archive: the go command stamps the binaries
	// with the repository's state, which an archive written into it
	// changes, unless git ignores the output directory.
	bins := make([]string, len(opts.platforms))
	for i, p := range opts.platforms {
		if bins[i], err = plan.build(p, tmp); err != nil {
			return err
		}
	}
	var artifacts []artifact
	for i, p := range opts.platforms {
		a, err := plan.archive(p, bins[i])
		if err != nil {
			return err
		}
		artifacts = append(artifacts, a)
		fmt.Fprintf(stdout, "wrote %s (%d bytes, sha256 %s)\n", plan.show(a.path), a.size, a.sha256)
	}
	spec, err := plan.spec(tmp)
	if err != nil {
		return err
	}
	plan.checkSpec(spec, stderr)
	return plan.writeIndex(spec, artifacts, time.Now(), stdout)
}
