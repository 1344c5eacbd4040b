package main

import (
	"errors"
	"flag"
	"fmt"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
)

// options is what `connkit new` writes: the template's data.
type options struct {
	Name        string // the connector's name, Go package and command
	Module      string // the module path
	Dir         string // where the module is written
	Source      bool
	Destination bool

	GoVersion      string // go.mod's go directive
	ConnkitVersion string // the version of connkit required
	ConnkitDir     string // a local checkout of connkit, replacing the requirement; absolute
}

// newConnector is `connkit new`: it writes a module with a connector, then
// runs go mod tidy there.
func newConnector(args []string, stdout, stderr io.Writer) error {
	opts, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	files, err := render(opts)
	if err != nil {
		return err
	}
	if err := write(opts.Dir, files); err != nil {
		return err
	}
	if err := tidy(opts); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote the connector %s into %s; next: cd %s && make test\n", opts.Name, opts.Dir, opts.Dir)
	return nil
}

// parseOptions parses the arguments of `connkit new`, flags before or
// after NAME, and checks them.
func parseOptions(args []string, stderr io.Writer) (options, error) {
	var opts options
	var connkitDir string
	fs := flag.NewFlagSet("connkit new", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	fs.StringVar(&opts.Module, "module", "", "the module `path`; default NAME")
	fs.StringVar(&opts.Dir, "dir", "", "the `directory` to write, missing or empty; default ./NAME")
	fs.BoolVar(&opts.Source, "source", false, "write a source (without -destination: only a source)")
	fs.BoolVar(&opts.Destination, "destination", false, "write a destination (without -source: only a destination)")
	fs.StringVar(&connkitDir, "connkit", "", "require connkit from the checkout in `directory`, with a replace directive")
	var names []string
	for {
		if err := fs.Parse(args); err != nil {
			return options{}, err
		}
		if fs.NArg() == 0 {
			break
		}
		names, args = append(names, fs.Arg(0)), fs.Args()[1:]
	}
	if len(names) != 1 {
		fs.Usage()
		return options{}, fmt.Errorf("expected one NAME, got %d arguments: %q", len(names), names)
	}
	opts.Name = names[0]
	if err := checkName(opts.Name); err != nil {
		return options{}, err
	}
	if opts.Module == "" {
		opts.Module = opts.Name
	}
	if err := checkModulePath(opts.Module); err != nil {
		return options{}, err
	}
	if !opts.Source && !opts.Destination {
		opts.Source, opts.Destination = true, true
	}
	opts.GoVersion = goVersion
	wd, err := os.Getwd()
	if err != nil {
		return options{}, err
	}
	// The checkout the command runs in, if any: a build from it requires
	// it.
	here := findCheckout(wd)
	bi, _ := debug.ReadBuildInfo()
	switch opts.ConnkitVersion = builtVersion(bi); {
	case connkitDir != "":
		dir, err := checkCheckout(connkitDir)
		if err != nil {
			return options{}, err
		}
		opts.ConnkitDir, opts.ConnkitVersion = dir, develVersion
	case opts.ConnkitVersion == "" && here != "":
		opts.ConnkitDir, opts.ConnkitVersion = here, develVersion
	case opts.ConnkitVersion == "":
		return options{}, errors.New("this connkit command was not built from a released connkit (but from a checkout, or a replaced requirement), so it does not know which version to require: run it inside a connkit checkout, or pass -connkit with the directory of one")
	}
	if opts.Dir == "" {
		opts.Dir = opts.Name // ./NAME, wherever the command runs
	}
	if err := checkEmpty(opts.Dir); err != nil {
		return options{}, err
	}
	return opts, nil
}

var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// checkName checks that name can be a connector's name, a Go package's
// name, an element of a module path and a file name.
func checkName(name string) error {
	switch {
	case !namePattern.MatchString(name):
		return fmt.Errorf("NAME %q: expected lower-case letters, digits and underscores, starting with a letter (it names the Go package and the command)", name)
	case token.IsKeyword(name), name == "main":
		return fmt.Errorf("NAME %q: is reserved in Go and cannot name an importable package", name)
	}
	return nil
}

var moduleElement = regexp.MustCompile(`^[A-Za-z0-9_~-]([A-Za-z0-9._~-]*[A-Za-z0-9_~-])?$`)

// checkModulePath checks that path is a module path: elements of letters,
// digits and ._~-, separated by slashes, none starting or ending with a dot.
func checkModulePath(path string) error {
	for elem := range strings.SplitSeq(path, "/") {
		if !moduleElement.MatchString(elem) {
			return fmt.Errorf("-module %q: element %q: expected letters, digits and the characters ._~-, not starting or ending with a dot", path, elem)
		}
	}
	return nil
}

// checkEmpty refuses to write into a directory that has files, or into a
// file.
func checkEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("-dir %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("-dir %s: exists and is not empty; connkit new does not overwrite files, choose another directory", dir)
	}
	return nil
}

// write writes files into dir, creating it.
func write(dir string, files map[string][]byte) error {
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(name, ".ci/") {
			mode = 0o755 // scripts
		}
		if err := os.WriteFile(path, content, mode); err != nil {
			return err
		}
	}
	return nil
}

// tidy runs go mod tidy in the new module, which adds connkit's
// dependencies to go.mod and go.sum. With a local checkout, the checkout's
// go.sum seeds the module's: it has the sums of the same requirements.
func tidy(opts options) error {
	if opts.ConnkitDir != "" {
		sums, err := os.ReadFile(filepath.Join(opts.ConnkitDir, "go.sum"))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(opts.Dir, "go.sum"), sums, 0o644); err != nil {
			return err
		}
	}
	cmd := exec.Command("go", "mod", "tidy")
	cmd.Dir, cmd.Env = opts.Dir, append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go mod tidy in %s: %w\n%s", opts.Dir, err, out)
	}
	return nil
}
