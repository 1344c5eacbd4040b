package plugin

import (
	"os"
	"syscall"
)

// parentDeathSignal is the signal the kernel sends a plugin process when
// its parent exits. SIGUSR1 is one the Go runtime ignores until the plugin
// listens for it, and go-plugin does not use.
var parentDeathSignal os.Signal = syscall.SIGUSR1

// askParentDeathSignal asks the kernel for parentDeathSignal when the
// parent exits. It runs during package initialisation, on the main thread,
// which lives as long as the process: the setting belongs to the thread
// that makes it.
func askParentDeathSignal() {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGUSR1), 0)
}
