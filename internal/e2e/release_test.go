package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	conduitpkg "github.com/connkit/connkit/internal/conduit"
	"github.com/matryer/is"
)

// TestRelease follows a connector from connkit new to Conduit as the
// registry installs it: connkit release, run in the new module as its
// release workflow runs it, writes the archives and index.json; the
// archive for this machine, as index.json names it, checked against the
// sha256 and size there, is installed as the registry installs one (its
// one regular file at the root becomes conduit-connector-lines_0.2.0,
// mode 0755, in the connectors directory); and real Conduit runs the
// module's pipeline file on it, standalone:lines@v0.2.0 both ways: every
// line of input.txt arrives in output.jsonl, in order. It logs how long
// each step took. The checkout is only read.
func TestRelease(t *testing.T) {
	conduitPath := conduitBin(t)
	is := is.New(t)
	_, step := authorSteps(t)
	dir, newTime := newLines(t, step, "-module", "github.com/you/conduit-connector-lines")
	releaseTime := step("connkit release", dir, "go", "run", "github.com/connkit/connkit/sdk/cmd/connkit", "release", "-version", "v0.2.0", "-platforms", runtime.GOOS+"/"+runtime.GOARCH)

	run := filepath.Join(t.TempDir(), "conduit")
	installed := filepath.Join(run, "connectors", "conduit-connector-lines_0.2.0")
	installFromIndex(t, filepath.Join(dir, "dist"), installed)
	info, err := os.Stat(installed)
	is.NoErr(err)
	is.Equal(info.Mode().Perm(), os.FileMode(0o755)) // as the registry installs it

	pipeline, err := os.ReadFile(filepath.Join(dir, "pipelines", "lines.yaml"))
	is.NoErr(err)
	// The plugin's specification names it lines, at the version the
	// release stamped, not the v0.1.0 that connkit new wrote.
	is.True(strings.Contains(string(pipeline), "plugin: standalone:lines@v0.1.0"))
	pipeline = []byte(strings.ReplaceAll(string(pipeline), "standalone:lines@v0.1.0", "standalone:lines@v0.2.0"))
	c, pipelineTime := pipeLines(t, conduitpkg.Options{Bin: conduitPath, Dir: run, Pipeline: string(pipeline)})
	t.Logf("connkit new %v, connkit release (this platform) %v, Conduit start to %d records acknowledged %v",
		newTime.Round(time.Millisecond), releaseTime.Round(time.Millisecond), linesIn, pipelineTime.Round(time.Millisecond))
	is.Equal(c.Metric("conduit_connector_bytes_count", "pipeline_name=lines", "plugin=standalone:lines@v0.2.0", "type=destination"), float64(linesIn))
	c.checkRunning("lines")
	c.stop()
	c.checkProblems()
}

// releaseEntry is what TestRelease reads of index.json.
type releaseEntry struct {
	Name     string
	Versions []struct {
		Version   string
		Artifacts []struct {
			OS, Arch, URL, SHA256 string
			Size                  int64
		}
	}
}

// installFromIndex installs the release in dist for this machine as
// Conduit's registry installs one from its index: it takes the artifact
// for this machine's platform from index.json, the archive its URL names
// (from dist, not the network), checks it against the artifact's sha256
// and size, and extracts the binary into dest.
func installFromIndex(t *testing.T, dist, dest string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dist, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var entry releaseEntry
	if err := json.Unmarshal(b, &entry); err != nil {
		t.Fatal(err)
	}
	if entry.Name != "lines" || len(entry.Versions) != 1 || entry.Versions[0].Version != "0.2.0" {
		t.Fatalf("index.json is not lines 0.2.0's entry:\n%s", b)
	}
	for _, a := range entry.Versions[0].Artifacts {
		if a.OS != runtime.GOOS || a.Arch != runtime.GOARCH {
			continue
		}
		archive, err := os.ReadFile(filepath.Join(dist, path.Base(a.URL)))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(archive)
		if hex.EncodeToString(sum[:]) != a.SHA256 || int64(len(archive)) != a.Size {
			t.Fatalf("%s: sha256 %x, %d bytes; index.json says %s, %d bytes", a.URL, sum, len(archive), a.SHA256, a.Size)
		}
		if err := extractBinary(archive, dest); err != nil {
			t.Fatalf("the registry refuses %s: %v", a.URL, err)
		}
		return
	}
	t.Fatalf("index.json has no artifact for %s/%s:\n%s", runtime.GOOS, runtime.GOARCH, b)
}

// extractBinary writes the binary of a gzipped tar archive to path, mode
// 0755, as the registry does: it refuses entries that are absolute or
// climb out with .., and links; it skips directories; and the archive's
// one regular file at its root is the binary, none or several refused.
func extractBinary(archive []byte, path string) error {
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	var bin []byte
	var found string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		name := filepath.Clean(hdr.Name)
		switch {
		case filepath.IsAbs(name) || !filepath.IsLocal(name):
			return fmt.Errorf("entry %q escapes", hdr.Name)
		case hdr.Typeflag == tar.TypeSymlink || hdr.Typeflag == tar.TypeLink:
			return fmt.Errorf("entry %q is a link", hdr.Name)
		case hdr.Typeflag != tar.TypeReg || strings.Contains(name, string(filepath.Separator)):
			continue
		case found != "":
			return fmt.Errorf("two regular files at the root: %q and %q", found, hdr.Name)
		}
		if bin, err = io.ReadAll(tr); err != nil {
			return err
		}
		found = hdr.Name
	}
	if found == "" {
		return errors.New("no regular file at the root")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		return err
	}
	return os.Chmod(path, 0o755) // whatever the umask
}
