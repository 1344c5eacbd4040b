// Package panics says where a panic in connector code happened: the
// connector's own frames, file and line, which the plugin server puts in
// the error a panicking call returns and the test kit in the check that
// fails.
package panics

import (
	"fmt"
	"runtime"
	"strings"
)

// maxFrames is how many of the connector's frames Where names.
const maxFrames = 3

// Where returns, called from a deferred function that recovers a panic,
// the panicking goroutine's frames that are the connector's, innermost
// first, as "function (file:line)": those between the panic and the first
// frame of connkit's own machinery (the plugin server, the SDK, its
// middleware, the test kit), the runtime's left out; at most three.
func Where() []string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)]) // Callers, Where, the deferred function
	var where []string
	for {
		fr, more := frames.Next()
		switch {
		case machinery(fr.Function) && !strings.HasSuffix(fr.File, "_test.go"): // a test's fake connector is the connector
			return where
		case !strings.HasPrefix(fr.Function, "runtime.") && len(where) < maxFrames:
			where = append(where, fmt.Sprintf("%s (%s:%d)", fr.Function, fr.File, fr.Line))
		}
		if !more {
			return where
		}
	}
}

// machinery reports whether function is connkit's own, which calls
// connector code.
func machinery(function string) bool {
	for _, p := range []string{
		"github.com/connkit/connkit/internal/",
		"github.com/connkit/connkit/sdk.",
		"github.com/connkit/connkit/sdk/sdktest.",
		"github.com/connkit/connkit/middleware.",
	} {
		if strings.HasPrefix(function, p) {
			return true
		}
	}
	return false
}

// At says where, as Where found it, to follow what panicked: " at
// function (file:line), called from …", or nothing without frames.
func At(where []string) string {
	if len(where) == 0 {
		return ""
	}
	return " at " + strings.Join(where, ", called from ")
}
