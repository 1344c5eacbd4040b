package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMakeCleanRemovesWhatRunLeaves runs a new module's make clean where
// make build and make run have left what they leave: the plugin in bin/,
// Conduit's conduit.db, the pipeline's output.jsonl, and each directory
// make run's recipe makes (processors/, empty). It removes each, and the
// Makefile's comment on clean names each. A processors/ directory that
// holds a plugin is the author's, and stays.
func TestMakeCleanRemovesWhatRunLeaves(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make here")
	}
	for _, tt := range []struct {
		name                string
		source, destination bool
		left                []string // what make build and make run leave, directories ending in /
	}{
		{"both", true, true, []string{"bin/", "conduit.db/", "output.jsonl"}},
		{"source", true, false, []string{"bin/", "conduit.db/"}},
		{"destination", false, true, []string{"bin/", "conduit.db/", "output.jsonl"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			files, err := render(options{Name: "lines", Module: "lines", Source: tt.source, Destination: tt.destination, GoVersion: goVersion, ConnkitVersion: "v0.3.0"})
			if err != nil {
				t.Fatal(err)
			}
			makefile := string(files["Makefile"])
			recipe := regexp.MustCompile(`(?m)^run:.*\n((?:\t.*\n|#.*\n)*)`).FindStringSubmatch(makefile)
			if recipe == nil {
				t.Fatalf("the Makefile has no run target:\n%s", makefile)
			}
			left := tt.left
			for _, m := range regexp.MustCompile(`mkdir -p (\S+)`).FindAllStringSubmatch(recipe[1], -1) {
				left = append(left, strings.TrimSuffix(m[1], "/")+"/")
			}
			if len(left) == len(tt.left) {
				t.Fatalf("make run's recipe makes no directory; the test expects processors/:\n%s", recipe[0])
			}
			comment := regexp.MustCompile(`(?m)^# make clean .*\n(?:#  .*\n)*`).FindString(makefile)
			for _, name := range left {
				if !strings.Contains(comment, strings.TrimSuffix(name, "/")) {
					t.Errorf("the Makefile's comment on make clean does not name %s:\n%s", name, comment)
				}
			}

			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "Makefile"), files["Makefile"], 0o644); err != nil {
				t.Fatal(err)
			}
			leave(t, dir, left)
			makeClean(t, dir)
			for _, name := range left {
				if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("make clean left %s (%v)", name, err)
				}
			}

			// A processor plugin the author put in processors/ stays.
			leave(t, dir, append(left, "processors/plugin.wasm"))
			makeClean(t, dir)
			if _, err := os.Stat(filepath.Join(dir, "processors", "plugin.wasm")); err != nil {
				t.Errorf("make clean removed a processor plugin: %v", err)
			}
		})
	}
}

// leave makes in dir the files and, ending in /, directories names, as
// make build and make run leave them.
func leave(t *testing.T, dir string, names []string) {
	t.Helper()
	for _, name := range names {
		path := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			if name != "processors/" { // make run leaves it empty
				if err := os.WriteFile(filepath.Join(path, "file"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// makeClean runs make clean in dir.
func makeClean(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "make", "clean")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make clean: %v\n%s", err, out)
	}
}
