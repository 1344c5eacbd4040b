package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// newArgs runs connkit new with args, its output discarded.
func newArgs(args ...string) error {
	return run(append([]string{"new"}, args...), io.Discard, io.Discard)
}

func TestNameMustBeAGoPackageName(t *testing.T) {
	for _, name := range []string{"", "Lines", "my-lines", "1lines", "_lines", "lïnes", "func", "main", "a/b"} {
		err := newArgs(name, "-dir", t.TempDir(), "-connkit", "../../..")
		if err == nil || !strings.Contains(err.Error(), `NAME "`+name+`"`) {
			t.Errorf("connkit new %q: %v, want an error naming NAME %q", name, err, name)
		}
	}
	for _, name := range []string{"lines", "s3", "my_lines"} {
		if err := checkName(name); err != nil {
			t.Errorf("checkName(%q) = %v, want nil", name, err)
		}
	}
}

func TestModuleMustBeAModulePath(t *testing.T) {
	for _, path := range []string{"/lines", "lines/", "example.com//lines", ".lines", "example.com/lines.", "example.com/li nes"} {
		err := newArgs("lines", "-module", path, "-dir", t.TempDir(), "-connkit", "../../..")
		if err == nil || !strings.Contains(err.Error(), `-module "`+path+`"`) {
			t.Errorf("-module %q: %v, want an error naming -module", path, err)
		}
	}
	if err := checkModulePath("github.com/you/conduit-connector-lines"); err != nil {
		t.Error(err)
	}
}

func TestRefusesANonEmptyDirectory(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	is.NoErr(os.WriteFile(readme, []byte("mine"), 0o644))
	err := newArgs("lines", "-dir", dir, "-connkit", "../../..")
	if err == nil || !strings.Contains(err.Error(), "-dir "+dir+": exists and is not empty") {
		t.Fatalf("connkit new into a directory with files: %v, want a refusal naming it", err)
	}
	content, err := os.ReadFile(readme)
	is.NoErr(err)
	is.Equal(string(content), "mine") // untouched
	entries, err := os.ReadDir(dir)
	is.NoErr(err)
	is.Equal(len(entries), 1) // nothing added
}

func TestOneNameFlagsBeforeOrAfterIt(t *testing.T) {
	is := is.New(t)
	for _, args := range [][]string{
		{"lines", "-source", "-dir", "d", "-connkit", "../../.."},
		{"-source", "-dir", "d", "lines", "-connkit", "../../.."},
	} {
		opts, err := parseOptions(args, io.Discard)
		is.NoErr(err)
		is.Equal(opts.Name, "lines")
		is.Equal(opts.Dir, "d")
		is.True(opts.Source && !opts.Destination)
	}
	for _, args := range [][]string{{}, {"lines", "more"}} {
		if _, err := parseOptions(args, io.Discard); err == nil || !strings.Contains(err.Error(), "expected one NAME") {
			t.Errorf("connkit new %q: %v, want an error asking for one NAME", args, err)
		}
	}
}

// A test binary is a development build of connkit, run inside the
// checkout: the new module requires that checkout, and is written into
// ./NAME, as -h says, there as anywhere else.
func TestDefaults(t *testing.T) {
	is := is.New(t)
	root, err := filepath.Abs("../../..")
	is.NoErr(err)
	opts, err := parseOptions([]string{"lines"}, io.Discard)
	is.NoErr(err)
	is.Equal(opts.Module, "lines")
	is.Equal(opts.Dir, "lines")
	is.True(opts.Source && opts.Destination) // both roles
	is.Equal(opts.ConnkitDir, root)
	var help strings.Builder
	_, err = parseOptions([]string{"-h"}, &help)
	is.True(errors.Is(err, flag.ErrHelp))
	is.True(strings.Contains(help.String(), "default ./NAME")) // -h says what it does

	t.Chdir(t.TempDir()) // outside a checkout, -connkit names one
	opts, err = parseOptions([]string{"lines", "-connkit", root}, io.Discard)
	is.NoErr(err)
	is.Equal(opts.Dir, "lines")
	is.Equal(opts.ConnkitDir, root)
}

// A development build run outside a checkout knows no version to require,
// and says so.
func TestDevelopmentBuildNeedsACheckout(t *testing.T) {
	t.Chdir(t.TempDir())
	err := newArgs("lines", "-dir", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "run it inside a connkit checkout, or pass -connkit") {
		t.Fatalf("connkit new from a development build outside a checkout: %v, want an error asking for one", err)
	}
}

func TestConnkitMustBeACheckout(t *testing.T) {
	err := newArgs("lines", "-dir", t.TempDir(), "-connkit", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "expected a checkout of github.com/connkit/connkit") {
		t.Fatalf("-connkit an empty directory: %v", err)
	}
}

// The go directive of a new module is connkit's own.
func TestGoVersionIsConnkits(t *testing.T) {
	gomod, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(gomod), "\ngo "+goVersion+"\n") {
		t.Fatalf("goVersion is %s; connkit's go.mod says otherwise:\n%s", goVersion, gomod)
	}
}
