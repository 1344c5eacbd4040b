package host

import (
	"errors"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/matryer/is"
)

// Crash kills the plugin process: it is gone when Crash returns, without
// Kill's graceful shutdown, and Kill afterwards has nothing left to do.
func TestCrashKillsThePluginProcess(t *testing.T) {
	is := is.New(t)
	bin := filepath.Join(t.TempDir(), "connkit-log")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "../../examples/log/cmd/connkit-log").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	p, err := Launch(bin, Options{})
	is.NoErr(err)
	defer p.Kill()
	_, err = p.Destination() // the process has started and answers
	is.NoErr(err)
	pid := p.client.ReattachConfig().Pid
	is.NoErr(syscall.Kill(pid, 0)) // running

	is.NoErr(p.Crash())
	is.True(errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)) // gone, and reaped
	is.True(p.client.Exited())
	is.True(p.Crash() != nil) // nothing left to crash
	p.Kill()                  // nor to kill
}
