package plugin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/matryer/is"
)

// A plugin whose parent is already gone when it starts exits on its own:
// it is adopted by a subreaper (here the test process, as a supervisor
// would), so its parent's pid looks alive, and no host ever connects.
func TestPluginStartedOrphaned(t *testing.T) {
	is := is.New(t)
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Skipf("cannot become a subreaper: %v", errno)
	}
	t.Cleanup(func() { syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0) })
	self, err := os.Executable()
	is.NoErr(err)
	dir := t.TempDir()
	gate, stderr := filepath.Join(dir, "gate"), filepath.Join(dir, "stderr")
	is.NoErr(syscall.Mkfifo(gate, 0o600))

	// The shell starts a subshell that waits at the gate, prints its pid
	// and exits; once the test has reaped the shell, the subshell's parent
	// is gone, and it opens the gate to become the plugin.
	sh := exec.Command("/bin/sh", "-c", `(read _ <"$1"; exec "$0" 2>"$2") >/dev/null 2>&1 & echo $!`, self, gate, stderr)
	sh.Env = append(os.Environ(),
		servePluginEnv+"=1",
		pconnector.HandshakeConfig.MagicCookieKey+"="+pconnector.HandshakeConfig.MagicCookieValue,
		"TMPDIR="+dir, // where go-plugin puts its socket
	)
	out, err := sh.Output()
	is.NoErr(err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	is.NoErr(err)
	is.NoErr(os.WriteFile(gate, []byte("go\n"), 0o600))

	exited := make(chan syscall.WaitStatus, 1)
	go func() {
		var status syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &status, 0, nil)
		exited <- status
	}()
	select {
	case status := <-exited:
		is.True(status.Exited())
		is.Equal(status.ExitStatus(), 0)
	case <-time.After(time.Minute):
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-exited
		t.Fatal("the plugin still ran a minute after it started orphaned")
	}
	log, err := os.ReadFile(stderr)
	is.NoErr(err)
	is.True(strings.Contains(string(log), "no host connected within 1s"))
}
