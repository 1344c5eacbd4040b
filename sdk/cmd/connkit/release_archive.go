package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// platform is an operating system and an architecture, as GOOS and
// GOARCH name them and the registry's artifacts do.
type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "/" + p.arch }

// releasePlatforms are the platforms a release has an archive for.
var releasePlatforms = []platform{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// platformList returns platforms as -platforms spells them.
func platformList(platforms []platform) string {
	names := make([]string, len(platforms))
	for i, p := range platforms {
		names[i] = p.String()
	}
	return strings.Join(names, ",")
}

// parsePlatforms returns the platforms that list, comma-separated, names:
// each one of releasePlatforms, at least one.
func parsePlatforms(list string) ([]platform, error) {
	var out []platform
	for _, name := range strings.Split(list, ",") {
		i := slices.IndexFunc(releasePlatforms, func(p platform) bool { return p.String() == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("-platforms %q: %q is not one of %s", list, name, platformList(releasePlatforms))
		}
		if !slices.Contains(out, releasePlatforms[i]) {
			out = append(out, releasePlatforms[i])
		}
	}
	return out, nil
}

// archiveTime is the modification time of every archive's binary, so
// that the same binary makes the same archive.
var archiveTime = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// artifact is one platform's archive, as written.
type artifact struct {
	platform
	path   string // absolute
	sha256 string // of the archive, in hex
	size   int64  // of the archive, in bytes
}

// binaryName returns the name of the command's binary on platform p.
func (p *releasePlan) binaryName(pl platform) string {
	if pl.os == "windows" {
		return p.name + ".exe"
	}
	return p.name
}

// archiveName returns the name of platform pl's archive:
// NAME_VERSION_OS_ARCH.tar.gz, VERSION without its v.
func (p *releasePlan) archiveName(pl platform) string {
	return fmt.Sprintf("%s_%s_%s_%s.tar.gz", p.name, strings.TrimPrefix(p.version, "v"), pl.os, pl.arch)
}

// build builds the command for pl into a directory of its own in tmp, as
// a static binary without the paths of the machine that built it, and
// returns the binary's path. The module's root package's version
// variable, if it has one (as connkit new writes it: the Connector's
// Version), is set to the release's.
func (p *releasePlan) build(pl platform, tmp string) (string, error) {
	bin := filepath.Join(tmp, pl.os+"_"+pl.arch, p.binaryName(pl))
	env := []string{"CGO_ENABLED=0", "GOOS=" + pl.os, "GOARCH=" + pl.arch}
	stamp := "-ldflags=-X " + p.module + ".version=" + p.version
	if _, err := goCommand(p.root, env, "build", "-trimpath", stamp, "-o", bin, p.cmd); err != nil {
		return "", fmt.Errorf("build %s for %s: %w", p.cmd, pl, err)
	}
	return bin, nil
}

// archive writes pl's archive of the binary bin into the output
// directory.
func (p *releasePlan) archive(pl platform, bin string) (a artifact, err error) {
	a = artifact{platform: pl, path: filepath.Join(p.out, p.archiveName(pl))}
	f, err := os.Create(a.path)
	if err != nil {
		return artifact{}, err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			a, err = artifact{}, cerr
		}
	}()
	h := sha256.New()
	n := &countingWriter{}
	if err := writeArchive(io.MultiWriter(f, h, n), p.binaryName(pl), bin); err != nil {
		return artifact{}, fmt.Errorf("%s: %w", a.path, err)
	}
	a.sha256, a.size = hex.EncodeToString(h.Sum(nil)), n.n
	return a, nil
}

// writeArchive writes to w a gzipped tar archive of one entry: the file
// bin as a regular file named name at the archive's root, mode 0755. The
// entry has a fixed time and owner, and no user or group names: the same
// file makes the same bytes, on any machine, as Conduit's registry
// installs them (a single regular file at the root, no links).
func writeArchive(w io.Writer, name, bin string) error {
	f, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(w) // no name, no time: its header is the same every time
	tw := tar.NewWriter(zw)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg, Name: name, Size: info.Size(), Mode: 0o755,
		ModTime: archiveTime, Format: tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return err
	}
	return errors.Join(tw.Close(), zw.Close())
}

// countingWriter counts the bytes written to it.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(b []byte) (int, error) {
	c.n += int64(len(b))
	return len(b), nil
}
