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
// it if goroutines started since are still running after a grace period.
func Check(t testing.TB) {
	t.Helper()
	before := goroutines()
	t.Cleanup(func() {
		var leaked []string
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			leaked = leaked[:0]
			for id, stack := range goroutines() {
				if _, ok := before[id]; !ok && !ignored(stack) {
					leaked = append(leaked, stack)
				}
			}
			if len(leaked) == 0 {
				return
			}
		}
		slices.Sort(leaked)
		t.Errorf("%d goroutines leaked:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	})
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

// goroutines returns the stacks of all goroutines by id.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
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
