package host

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// Busy work shows up as processor time.
func TestReadProcStatCPU(t *testing.T) {
	before, err := ReadProcStat(os.Getpid())
	if err != nil {
		t.Skip(err) // no /proc
	}
	if before.PPid != os.Getppid() {
		t.Fatalf("PPid: got %d, want %d", before.PPid, os.Getppid())
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		now, err := ReadProcStat(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if now.CPU > before.CPU {
			return
		}
	}
	t.Fatal("10 s of busy work and the processor time did not advance")
}

// A child is listed while it runs, and has a resident set.
func TestChildPidsAndRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if !slices.Contains(ChildPids(os.Getpid()), cmd.Process.Pid) {
		t.Fatalf("sleep %d is not among the children %v", cmd.Process.Pid, ChildPids(os.Getpid()))
	}
	rss, err := ProcessRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss < 1<<20 {
		t.Fatalf("the test's resident set: %d bytes, expected at least 1 MiB", rss)
	}
	if _, err := ProcessRSS(1 << 30); err == nil {
		t.Fatal("no error for a process that does not exist")
	}
}
