package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// protocolModule is the module of Conduit's plugin protocol, whose version
// a connector builds with is the registry entry's minProtocolVersion.
const protocolModule = "github.com/conduitio/conduit-connector-protocol"

// releasePlan is a release resolved against the module it runs in: what
// is built, where it goes, and the names and addresses that follow.
type releasePlan struct {
	version  string     // vMAJOR.MINOR.PATCH
	module   string     // the module's path
	name     string     // the command's name, the base of its package path
	root     string     // the module's root directory
	cmd      string     // the command's package, relative to root: ./cmd/NAME
	out      string     // the directory written, absolute
	cwd      string     // the directory paths are shown relative to
	repo     repository // where the release is published
	protocol string     // the protocol module's version the module builds with, without v
}

// releaseName is a name a release can take, for the file names of its
// archives.
var releaseName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// planRelease resolves opts against the module in opts.dir, or in the
// current directory.
func planRelease(opts releaseOptions) (*releasePlan, error) {
	cwd := opts.dir
	if cwd == "" {
		var err error
		if cwd, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	modPath, root, err := findModule(cwd)
	if err != nil {
		return nil, err
	}
	p := &releasePlan{version: opts.Version, module: modPath, root: root, cwd: cwd, cmd: opts.Cmd, out: opts.Out}
	if p.repo, err = releaseRepository(opts.Repository, modPath); err != nil {
		return nil, err
	}
	if p.cmd == "" {
		if p.cmd, err = findCommand(root); err != nil {
			return nil, err
		}
	}
	if info, err := os.Stat(filepath.Join(root, p.cmd)); err == nil && info.IsDir() && filepath.IsLocal(p.cmd) && !strings.HasPrefix(p.cmd, ".") {
		p.cmd = "./" + filepath.ToSlash(p.cmd) // a directory, not an import path
	}
	if err := checkCommand(root, p.cmd); err != nil {
		return nil, err
	}
	p.name = path.Base(filepath.ToSlash(filepath.Clean(p.cmd)))
	if !releaseName.MatchString(p.name) {
		return nil, fmt.Errorf("-cmd %s: the release is named after the command's directory, NAME in ./cmd/NAME, which must be letters, digits and ._-", p.cmd)
	}
	if !filepath.IsAbs(p.out) {
		p.out = filepath.Join(root, p.out)
	}
	if p.protocol, err = protocolVersion(root); err != nil {
		return nil, err
	}
	return p, nil
}

// goCommand runs the go command in dir with env added to the process's
// environment and returns what it printed on stdout. Its error has what
// it printed on stderr.
func goCommand(dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stderr = dir, append(os.Environ(), env...), &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return out, nil
}

// findModule returns the path and the root directory of the module that
// dir is in, as the go command finds it outside any workspace: a release
// is of one module.
func findModule(dir string) (modPath, root string, err error) {
	out, err := goCommand(dir, []string{"GOWORK=off"}, "list", "-m", "-json")
	if err != nil {
		return "", "", fmt.Errorf("connkit release runs in a connector's Go module: %w", err)
	}
	var m struct{ Path, Dir string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", "", fmt.Errorf("go list -m -json in %s: %w", dir, err)
	}
	if m.Dir == "" { // outside any module, go list -m names command-line-arguments
		return "", "", fmt.Errorf("%s is in no module the go command knows (no go.mod there or above): connkit release runs in a connector's Go module", dir)
	}
	return m.Path, m.Dir, nil
}

// findCommand returns the only directory in root's cmd/, as a package
// path: the connector's command, by connkit new's layout.
func findCommand(root string) (string, error) {
	entries, err := os.ReadDir(filepath.Join(root, "cmd"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, "./cmd/"+e.Name())
		}
	}
	switch len(dirs) {
	case 1:
		return dirs[0], nil
	case 0:
		return "", fmt.Errorf("-cmd: the module in %s has no directory in cmd/ to release; name the connector's command with -cmd ./cmd/NAME", root)
	}
	slices.Sort(dirs)
	return "", fmt.Errorf("-cmd: the module in %s has several commands (%s); name the connector's with -cmd", root, strings.Join(dirs, ", "))
}

// checkCommand checks that cmd is a main package of the module in root.
func checkCommand(root, cmd string) error {
	out, err := goCommand(root, nil, "list", "-f", "{{.Name}}", cmd)
	if err != nil {
		return fmt.Errorf("-cmd %s: %w", cmd, err)
	}
	if name := strings.TrimSpace(string(out)); name != "main" {
		return fmt.Errorf("-cmd %s: is the package %s, expected a command (package main): the connector's plugin", cmd, name)
	}
	return nil
}

// protocolVersion returns the version of Conduit's plugin protocol module
// that the module in root builds with, without its v.
func protocolVersion(root string) (string, error) {
	out, err := goCommand(root, nil, "list", "-m", "-f", "{{.Version}}", protocolModule)
	if err != nil {
		return "", fmt.Errorf("the module does not build with %s, Conduit's plugin protocol: is it a connector? %w", protocolModule, err)
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), nil
}

// show returns path as the release prints it: relative to where it runs,
// if it is below.
func (p *releasePlan) show(path string) string {
	if rel, err := filepath.Rel(p.cwd, path); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return path
}

// repository is a GitHub repository, where a release is published and
// whose release workflow signs it.
type repository struct{ owner, name string }

var repositoryURL = regexp.MustCompile(`^https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)$`)

// parseRepository parses a -repository flag's value.
func parseRepository(url string) (repository, error) {
	m := repositoryURL.FindStringSubmatch(url)
	if m == nil || m[2] == "." || m[2] == ".." {
		return repository{}, fmt.Errorf("-repository %q: expected a GitHub repository's address, https://github.com/OWNER/REPO", url)
	}
	return repository{owner: m[1], name: m[2]}, nil
}

// releaseRepository returns the repository that flag names or else the
// one the module path github.com/OWNER/REPO[/...] names.
func releaseRepository(flag, modPath string) (repository, error) {
	if flag != "" {
		return parseRepository(flag)
	}
	parts := strings.Split(modPath, "/")
	if len(parts) >= 3 && parts[0] == "github.com" {
		if r, err := parseRepository("https://github.com/" + parts[1] + "/" + parts[2]); err == nil {
			return r, nil
		}
	}
	return repository{}, fmt.Errorf("the module %s is not at github.com/OWNER/REPO, so its GitHub repository is not known: pass -repository https://github.com/OWNER/REPO, the repository whose release workflow publishes the connector", modPath)
}

// url returns the repository's address.
func (r repository) url() string { return "https://github.com/" + r.owner + "/" + r.name }

// downloadURL returns the address of the file that the release of tag has
// as an asset.
func (r repository) downloadURL(tag, file string) string {
	return r.url() + "/releases/download/" + tag + "/" + file
}

// identityPattern returns the signing identity the registry pins the
// connector to: the repository's release workflow at a tag vX.Y.Z.
func (r repository) identityPattern() string {
	return "^" + regexp.QuoteMeta(r.url()+"/.github/workflows/release.yml") + `@refs/tags/v[0-9]+\.[0-9]+\.[0-9]+$`
}
