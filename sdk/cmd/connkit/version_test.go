package main

import (
	"runtime/debug"
	"testing"
)

func TestBuiltVersion(t *testing.T) {
	connkit := func(version string, replace *debug.Module) *debug.Module {
		return &debug.Module{Path: connkitModule, Version: version, Replace: replace}
	}
	for _, tt := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"go run connkit@version", &debug.BuildInfo{Main: *connkit("v0.3.0", nil)}, "v0.3.0"},
		{"go run in a module that requires it", &debug.BuildInfo{Main: debug.Module{Path: "example.com/x"}, Deps: []*debug.Module{{Path: "example.com/y", Version: "v1.0.0"}, connkit("v0.3.1", nil)}}, "v0.3.1"},
		{"a checkout", &debug.BuildInfo{Main: *connkit("(devel)", nil)}, ""},
		{"a checkout with changes", &debug.BuildInfo{Main: *connkit("v0.3.1-0.20261125070000-abcdefabcdef+dirty", nil)}, ""},
		{"a replaced requirement", &debug.BuildInfo{Main: debug.Module{Path: "example.com/x"}, Deps: []*debug.Module{connkit("v0.3.1", &debug.Module{Path: "../connkit"})}}, ""},
		{"not connkit", &debug.BuildInfo{Main: debug.Module{Path: "example.com/x", Version: "v1.0.0"}}, ""},
		{"no build information", nil, ""},
	} {
		if got := builtVersion(tt.bi); got != tt.want {
			t.Errorf("%s: builtVersion = %q, want %q", tt.name, got, tt.want)
		}
	}
}
