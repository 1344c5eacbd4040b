package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
)

const (
	connkitModule = "github.com/connkit/connkit"
	// goVersion is the go directive of connkit's go.mod, the least a
	// module that requires it can have.
	goVersion = "1.26.0"
	// develVersion is required of a checkout, which a replace directive
	// stands in for.
	develVersion = "v0.0.0-00010101000000-000000000000"
)

// builtVersion returns the version of connkit this command was built
// from: its own module's (go run connkit@version) or the requirement's (go
// run inside a module that requires connkit). It is empty for a build from
// a local checkout, which the go command does not sum: a development build,
// a version stamped from the checkout's VCS, a replaced requirement.
func builtVersion(bi *debug.BuildInfo) string {
	if bi == nil {
		return ""
	}
	m := &bi.Main
	if m.Path != connkitModule {
		m = nil
		for _, d := range bi.Deps {
			if d.Path == connkitModule {
				m = d
			}
		}
	}
	if m == nil || m.Replace != nil || m.Sum == "" {
		return ""
	}
	return m.Version
}

var moduleDirective = regexp.MustCompile(`(?m)^module\s+(\S+)\s*$`)

// checkCheckout returns dir, absolute, if it holds connkit's module.
func checkCheckout(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("-connkit %s: %w", dir, err)
	}
	gomod, err := os.ReadFile(filepath.Join(abs, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("-connkit %s: expected a checkout of %s: %w", dir, connkitModule, err)
	}
	if m := moduleDirective.FindSubmatch(gomod); m == nil || string(m[1]) != connkitModule {
		return "", fmt.Errorf("-connkit %s: its go.mod is not the module %s", dir, connkitModule)
	}
	return abs, nil
}

// findCheckout returns the connkit checkout that dir is in, or "".
func findCheckout(dir string) string {
	for {
		if root, err := checkCheckout(dir); err == nil {
			return root
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
