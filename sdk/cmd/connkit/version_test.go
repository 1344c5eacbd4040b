package main

import (
	"runtime/debug"
	"testing"
)

func TestBuiltVersion(t *testing.T) {
	// The go command sums a module it downloaded, never a checkout.
	const sum = "h1:2Jf0EP1eN3WlFG9Zr4Z1Ao+6rEpqR6qUk1Xq0qOsXy8="
	connkit := func(version, sum string, replace *debug.Module) *debug.Module {
		return &debug.Module{Path: connkitModule, Version: version, Sum: sum, Replace: replace}
	}
	other := debug.Module{Path: "example.com/x", Version: "v1.0.0", Sum: sum}
	for _, tt := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"go run connkit@version", &debug.BuildInfo{Main: *connkit("v0.3.0", sum, nil)}, "v0.3.0"},
		{"go run in a module that requires it", &debug.BuildInfo{Main: other, Deps: []*debug.Module{&other, connkit("v0.3.1", sum, nil)}}, "v0.3.1"},
		{"a checkout", &debug.BuildInfo{Main: *connkit("(devel)", "", nil)}, ""},
		{"a checkout stamped with its commit", &debug.BuildInfo{Main: *connkit("v0.3.1-0.20261125070000-abcdefabcdef", "", nil)}, ""},
		{"the same, with changes", &debug.BuildInfo{Main: *connkit("v0.3.1-0.20261125070000-abcdefabcdef+dirty", "", nil)}, ""},
		{"a replaced requirement", &debug.BuildInfo{Main: other, Deps: []*debug.Module{connkit("v0.3.1", "", &debug.Module{Path: "../connkit"})}}, ""},
		{"not connkit", &debug.BuildInfo{Main: other, Deps: []*debug.Module{&other}}, ""},
		{"no build information", nil, ""},
	} {
		if got := builtVersion(tt.bi); got != tt.want {
			t.Errorf("%s: builtVersion = %q, want %q", tt.name, got, tt.want)
		}
	}
}
