package main

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// scaffold writes a connector module with connkit new, both roles, into a
// temporary directory, requiring this checkout, and returns its root.
func scaffold(t *testing.T, module string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "lines")
	if err := run([]string{"new", "lines", "-module", module, "-dir", dir, "-connkit", "../../.."}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	return dir
}

// releaseIn runs connkit release with args in dir, building for
// platforms (every one if nil), and returns what it printed on stdout and
// stderr.
func releaseIn(dir string, platforms []platform, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	opts, err := parseReleaseOptions(args, &errOut)
	if err != nil {
		return "", errOut.String(), err
	}
	opts.dir = dir
	if platforms != nil {
		opts.platforms = platforms
	}
	err = releaseConnector(opts, &out, &errOut)
	return out.String(), errOut.String(), err
}

// hostOnly is the platform of this machine, for the tests that need one
// archive and not every one.
var hostOnly = []platform{{runtime.GOOS, runtime.GOARCH}}

// TestReleaseIsWhatTheRegistryInstalls releases a module that connkit new
// wrote, committed to git, as its release workflow does: go run connkit
// release, from the module's requirement, with the go command stamping
// the commit into the binaries, as on GitHub's runners. (The command runs
// apart from the test binary: under -race, compressing six binaries takes
// minutes.) Each platform's archive is what Conduit's registry installs:
// one entry, the binary for that platform, at the root, mode 0755.
// checksums.txt and index.json say what the files are, and where the
// release workflow publishes them. A second release, from a directory
// below the module's root, with the first's dist/ there, makes the same
// archives.
func TestReleaseIsWhatTheRegistryInstalls(t *testing.T) {
	t.Parallel()
	dir := scaffold(t, "github.com/you/conduit-connector-lines")
	commit := gitCommit(t, dir)
	start := time.Now()
	stdout, stderr := releaseCommand(t, dir, "-version", "v0.1.0")
	t.Logf("connkit release, 6 platforms: %v", time.Since(start).Round(time.Millisecond))
	if stderr != "" {
		t.Errorf("connkit release warned:\n%s", stderr)
	}
	dist := filepath.Join(dir, "dist")
	sums := checkArchives(t, dist, commit)
	for _, name := range append(slices.Sorted(maps.Keys(sums)), "checksums.txt", "index.json") {
		if !strings.Contains(stdout, "wrote "+filepath.Join("dist", name)) {
			t.Errorf("connkit release does not say it wrote dist/%s:\n%s", name, stdout)
		}
	}
	checkChecksums(t, dist, sums)
	checkIndex(t, dist, sums, protocolRequired(t, dir), start)

	start = time.Now()
	releaseCommand(t, filepath.Join(dir, "cmd", "lines"), "-version", "v0.1.0")
	t.Logf("connkit release, again: %v", time.Since(start).Round(time.Millisecond))
	if again := checkArchives(t, dist, commit); !maps.Equal(again, sums) {
		t.Errorf("a second release made other archives:\n%v\nthe first:\n%v", again, sums)
	}
}

// releaseCommand runs connkit release with args in dir, as the release
// workflow runs it, with version control stamped into the binaries, and
// returns what it printed on stdout and stderr.
func releaseCommand(t *testing.T, dir string, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", append([]string{"run", "github.com/connkit/connkit/sdk/cmd/connkit", "release"}, args...)...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "GOFLAGS=-buildvcs=true")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("connkit release %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, errOut.String())
	}
	return out.String(), errOut.String()
}

// gitCommit makes the module in dir a git repository of one commit, with
// every file that git add takes, and returns the commit.
func gitCommit(t *testing.T, dir string) string {
	t.Helper()
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=connkit", "-c", "user.email=connkit@example.com", "commit", "-q", "-m", "new"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// checkArchives checks dist's archive of each platform, and returns
// their sha256 sums by file name. Each is what the registry installs;
// beyond that, it has one entry, with a fixed time and owner, and the
// binary is for its platform, built from commit without changes.
func checkArchives(t *testing.T, dist, commit string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	for _, p := range releasePlatforms {
		name := fmt.Sprintf("lines_0.1.0_%s_%s.tar.gz", p.os, p.arch)
		b, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		sums[name] = hex.EncodeToString(sum[:])
		bin, content, entries, err := installable(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: the registry refuses it: %v", name, err)
		}
		want := map[bool]string{false: "lines", true: "lines.exe"}[p.os == "windows"]
		if len(entries) != 1 || bin.Name != want || bin.Mode != 0o755 || bin.Uid != 0 || bin.Gid != 0 ||
			bin.Uname != "" || bin.Gname != "" || !bin.ModTime.Equal(archiveTime) {
			t.Errorf("%s: %d entries, the binary %q mode %o, owner %d:%d (%q:%q), time %v; want one, %q mode 755, owner 0:0, no names, time %v",
				name, len(entries), bin.Name, bin.Mode, bin.Uid, bin.Gid, bin.Uname, bin.Gname, bin.ModTime, want, archiveTime)
		}
		if got, err := executablePlatform(content); err != nil || got != p {
			t.Errorf("%s: the binary is for %v (%v), want %v", name, got, err, p)
		}
		checkStamp(t, name, content, commit)
	}
	return sums
}

// checkStamp checks that the binary records commit, without changes: the
// release left the repository as it was.
func checkStamp(t *testing.T, name string, content []byte, commit string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "bin")
	if err == nil {
		_, err = f.Write(content)
		err = f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	bi, err := buildinfo.ReadFile(f.Name())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["vcs.revision"] != commit || settings["vcs.modified"] != "false" || settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("%s: the binary's build settings are %v; want commit %s unmodified, CGO_ENABLED=0 and -trimpath", name, settings, commit)
	}
}

// checkChecksums checks dist/checksums.txt against the archives' sums.
func checkChecksums(t *testing.T, dist string, sums map[string]string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, name := range slices.Sorted(maps.Keys(sums)) {
		want.WriteString(sums[name] + "  " + name + "\n")
	}
	if string(got) != want.String() {
		t.Errorf("checksums.txt:\n%s\nwant\n%s", got, want.String())
	}
}

// protocolRequired returns the version of the protocol module that the
// go.mod in dir requires, without its v.
func protocolRequired(t *testing.T, dir string) string {
	t.Helper()
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/conduitio/conduit-connector-protocol v(\S+)`).FindSubmatch(gomod)
	if m == nil {
		t.Fatalf("go.mod does not require the protocol module:\n%s", gomod)
	}
	return string(m[1])
}

// checkIndex checks dist/index.json: the connector's entry for the
// registry's index, with exactly the fields the index's schema has, and
// the release's archives at the addresses of the GitHub release.
func checkIndex(t *testing.T, dist string, sums map[string]string, protocol string, start time.Time) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dist, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkFields(t, b)
	var entry indexEntry
	if err := json.Unmarshal(b, &entry); err != nil {
		t.Fatal(err)
	}
	const download = "https://github.com/you/conduit-connector-lines/releases/download/v0.1.0/"
	want := indexEntry{
		Name: "lines", Description: "Reads lines from a file; appends records to a file as JSON lines.",
		Repository: "https://github.com/you/conduit-connector-lines",
		Publisher: indexPublisher{
			ExpectedOIDCIssuer:      "https://token.actions.githubusercontent.com",
			ExpectedIdentityPattern: `^https://github\.com/you/conduit-connector-lines/\.github/workflows/release\.yml@refs/tags/v[0-9]+\.[0-9]+\.[0-9]+$`,
		},
		Versions: []indexVersion{{
			Version: "0.1.0", MinConduitVersion: "0.14.0", MinProtocolVersion: protocol,
			SLSAProvenance: indexProvenance{BundleURL: download + "multiple.intoto.jsonl", PredicateType: "https://slsa.dev/provenance/v1"},
		}},
	}
	for _, p := range releasePlatforms {
		name := fmt.Sprintf("lines_0.1.0_%s_%s.tar.gz", p.os, p.arch)
		info, err := os.Stat(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		want.Versions[0].Artifacts = append(want.Versions[0].Artifacts, indexArtifact{
			OS: p.os, Arch: p.arch, Kind: "standalone", URL: download + name, SHA256: sums[name], Size: info.Size(),
			Signature: indexSignature{BundleURL: download + name + ".sigstore.json"},
		})
	}
	if len(entry.Versions) == 1 {
		at := entry.Versions[0].ReleasedAt
		if at.Before(start.Truncate(time.Second)) || at.After(time.Now()) || at.Location() != time.UTC {
			t.Errorf("releasedAt %v, want the time of the release, in UTC", at)
		}
		want.Versions[0].ReleasedAt = at
	}
	if got, _ := json.MarshalIndent(entry, "", "  "); !bytes.Equal(got, must(json.MarshalIndent(want, "", "  "))) {
		t.Errorf("index.json:\n%s\nwant\n%s", got, must(json.MarshalIndent(want, "", "  ")))
	}
	checkIdentityPattern(t, entry.Publisher.ExpectedIdentityPattern)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// checkFields checks that the entry in index.json has the fields of the
// registry index's schema, no more, no fewer.
func checkFields(t *testing.T, b []byte) {
	t.Helper()
	var entry map[string]any
	if err := json.Unmarshal(b, &entry); err != nil {
		t.Fatal(err)
	}
	keys := func(v any) []string { m, _ := v.(map[string]any); return slices.Sorted(maps.Keys(m)) }
	first := func(v any) any { l, _ := v.([]any); return append(l, nil)[0] }
	version := first(entry["versions"])
	artifact := first(version.(map[string]any)["artifacts"])
	for _, tt := range []struct {
		what string
		v    any
		want []string
	}{
		{"the entry", entry, []string{"description", "name", "publisher", "repository", "versions"}},
		{"publisher", entry["publisher"], []string{"expectedIdentityPattern", "expectedOIDCIssuer"}},
		{"a version", version, []string{"artifacts", "deprecated", "minConduitVersion", "minProtocolVersion", "releasedAt", "slsaProvenance", "version"}},
		{"an artifact", artifact, []string{"arch", "kind", "os", "sha256", "signature", "size", "url"}},
		{"signature", artifact.(map[string]any)["signature"], []string{"bundleURL"}},
		{"slsaProvenance", version.(map[string]any)["slsaProvenance"], []string{"bundleURL", "predicateType"}},
	} {
		if got := keys(tt.v); !slices.Equal(got, tt.want) {
			t.Errorf("%s has the fields %q, want %q", tt.what, got, tt.want)
		}
	}
}

// checkIdentityPattern checks that the pattern admits the repository's
// release workflow at a tag vX.Y.Z, and nothing else.
func checkIdentityPattern(t *testing.T, pattern string) {
	t.Helper()
	re, err := regexp.Compile(pattern)
	if err != nil {
		t.Fatal(err)
	}
	const workflow = "https://github.com/you/conduit-connector-lines/.github/workflows/release.yml"
	for identity, want := range map[string]bool{
		workflow + "@refs/tags/v0.1.0":      true,
		workflow + "@refs/tags/v10.20.30":   true,
		workflow + "@refs/tags/v0.1.0-rc.1": false,
		workflow + "@refs/heads/main":       false,
		"https://github.com/you/conduit-connector-lines/.github/workflows/test.yml@refs/tags/v0.1.0":     false,
		"https://github.com/you/conduit-connector-linesx/.github/workflows/release.yml@refs/tags/v0.1.0": false,
		"https://github.com/you/conduit-connector-lines/xgithub/workflows/release.yml@refs/tags/v0.1.0":  false,
	} {
		if re.MatchString(identity) != want {
			t.Errorf("the identity pattern admits %s: %v, want %v", identity, !want, want)
		}
	}
}
