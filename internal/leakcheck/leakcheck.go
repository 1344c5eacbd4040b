// Package leakcheck fails a test that leaves goroutines running.
package leakcheck

import (
	"bytes"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// Check records the goroutines running now and, when the test ends, fails
// it if goroutines started since are still running after a grace period,
// except those running one of the functions ignore names (see
// [Goroutines.Leaked]).
func Check(t testing.TB, ignore ...string) {
	t.Helper()
	before := Snapshot()
	t.Cleanup(func() {
		if leaked := before.Leaked(5*time.Second, ignore...); len(leaked) > 0 {
			t.Errorf("%d goroutines leaked:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
	})
}

// Goroutines are the goroutines running at one moment, by id.
type Goroutines map[string]string

// Snapshot returns the goroutines running now.
func Snapshot() Goroutines { return goroutines() }

// Leaked waits up to grace for the goroutines started since g was taken to
// end, and returns the stacks of those still running, sorted. A goroutine
// with one of the functions ignore names in its stack is not counted: a
// library's worker that lives as long as the process, once started. A name
// is a function's full name as a stack trace shows it, without arguments:
// "github.com/nxadm/tail/watch.(*InotifyTracker).run".
func (g Goroutines) Leaked(grace time.Duration, ignore ...string) []string {
	var leaked []string
	for deadline := time.Now().Add(grace); ; time.Sleep(10 * time.Millisecond) {
		leaked = leaked[:0]
		for id, stack := range goroutines() {
			if _, ok := g[id]; !ok && !ignored(stack) && !runs(stack, ignore) {
				leaked = append(leaked, stack)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			break
		}
	}
	slices.Sort(leaked)
	return leaked
}

// ignored are goroutines owned by the runtime or by libraries' process-wide
// workers, which live as long as the process.
func ignored(stack string) bool {
	for _, s := range []string{
		"testing.(*T).Run", "testing.tRunner", "runtime.goexit0", "signal.signal_recv",
		"leakcheck.goroutines", "grpc/internal/grpcsync.(*CallbackSerializer)",
		"go-plugin.(*gRPCBrokerServer)", "created by os/signal.Notify",
	} {
		if strings.Contains(stack, s) {
			return true
		}
	}
	return false
}

// runs reports whether one of the functions named in funcs is in stack.
func runs(stack string, funcs []string) bool {
	if len(funcs) == 0 {
		return false
	}
	for line := range strings.Lines(stack) {
		if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "goroutine ") {
			continue // a file and line, or the header
		}
		// "pkg.(*T).m(0xc000010000, ...)" or "created by pkg.f in goroutine 7"
		line = strings.TrimSuffix(line, "\n")
		if by, ok := strings.CutPrefix(line, "created by "); ok {
			line, _, _ = strings.Cut(by, " in goroutine ")
		} else if i := strings.LastIndexByte(line, '('); i > 0 {
			line = line[:i]
		}
		if slices.Contains(funcs, line) {
			return true
		}
	}
	return false
}

// goroutines returns the stacks of all goroutines by id.
func goroutines() Goroutines {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := Goroutines{}
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		header, _, _ := strings.Cut(string(g), "\n")
		// "goroutine 12 [chan receive]:"
		fields := strings.Fields(header)
		if len(fields) >= 2 && fields[0] == "goroutine" {
			out[fields[1]] = string(g)
		}
	}
	return out
}
