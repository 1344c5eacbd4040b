//go:build linux

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	conduitpkg "github.com/connkit/connkit/internal/conduit"
	"github.com/matryer/is"
)

// TestConduitKilled kills Conduit with SIGKILL while a standalone:postgres
// source streams changes, checks that its plugins exit on their own, and
// starts Conduit again on the same database and state: the source gets its
// replication slot back (an orphaned plugin would keep it in use, and every
// restart would fail on it) and the changes keep coming.
func TestConduitKilled(t *testing.T) {
	const ddl = `CREATE TABLE items (id int PRIMARY KEY, n bigint)`
	from, src := sourceDatabase(t, ddl+`; INSERT INTO items SELECT i, i FROM generate_series(1, 1000) i`)
	to, dst := sourceDatabase(t, ddl)
	pipeline := pipelineYAML("standalone:postgres", map[string]string{
		"url": from, "tables": "items", "slot.name": dbName(from), "sdk.batch.size": "100", "sdk.batch.delay": "10ms",
	}, "standalone:postgres", map[string]string{"url": to})
	insert := func(first, last int) {
		t.Helper()
		if _, err := src.Exec(t.Context(), `INSERT INTO items SELECT i, i FROM generate_series($1::int, $2::int) i`, first, last); err != nil {
			t.Fatal(err)
		}
	}
	// Positions survive Conduit in a database on disk.
	state := filepath.Join(t.TempDir(), "conduit.db")
	flags := []string{"--db.type", "badger", "--db.badger.path", state}
	is := is.New(t)

	// The test adopts the plugins Conduit leaves behind, to see how they
	// end: torn down and exited, not killed by a write to a closed pipe.
	adoptOrphans(t)
	dir := t.TempDir()
	c := startServer(t, conduitpkg.Options{
		Bin:      conduitBin(t),
		Dir:      dir,
		Pipeline: pipeline,
		Plugins:  []string{binary("connkit-postgres")},
		Flags:    flags,
	})
	c.waitForAcked(1000)
	insert(1001, 1100)
	c.waitForAcked(1100)
	plugins := childrenRunning(t, c.Pid(), binary("connkit-postgres"))
	is.Equal(len(plugins), 2) // the source's and the destination's
	t.Cleanup(func() {
		for _, pid := range plugins {
			if alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL) // the test failed; leave nothing behind
			}
		}
	})
	c.Kill() // SIGKILL, as an OOM killer or a crash ends it
	deadline := time.Now().Add(time.Minute)
	for _, pid := range plugins {
		var status syscall.WaitStatus
		for {
			got, err := syscall.Wait4(pid, &status, syscall.WNOHANG, nil)
			if err != nil {
				t.Fatalf("wait for plugin %d: %v", pid, err)
			}
			if got == pid {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("plugin %d still runs a minute after Conduit was killed", pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !status.Exited() || status.ExitStatus() != 0 {
			t.Errorf("plugin %d ended with %v (signal %v), not after tearing down and exiting", pid, status.ExitStatus(), status.Signal())
		}
	}

	insert(1101, 1200) // while no one reads
	c = runConduit(t, conduitBin(t), dir, flags...)
	waitForRows := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			if status, errText := c.PipelineState("e2e"); status == "STATUS_DEGRADED" {
				t.Fatalf("pipeline degraded: %s", errText)
			}
			n := count(t, to, `SELECT count(*) FROM items`)
			if n == want {
				return
			}
			select {
			case <-c.Done():
				t.Fatalf("Conduit exited (%v) with %d of %d rows copied", c.Err(), n, want)
			case <-time.After(100 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d rows copied after 3 minutes", n, want)
			}
		}
	}
	waitForRows(1200) // the changes made before and after the restart
	insert(1201, 1300)
	waitForRows(1300) // and those made once restarted
	var sum int64
	if err := dst.QueryRow(t.Context(), `SELECT sum(n) FROM items`).Scan(&sum); err != nil {
		t.Fatal(err)
	}
	is.Equal(sum, int64(1300*1301/2))
	c.stop()
	if log := c.Log(); strings.Contains(log, "is in use") {
		t.Errorf("the restarted source found its slot in use:\n%s", log)
	}
	c.checkProblems()
}

// TestConduitKilledAtRandom starts Conduit 50 times and kills it with
// SIGKILL at a random point of each run: while it launches every plugin
// in its connectors directory to read its specification, while it starts
// the pipeline's, or while they run. The test adopts the orphans, as a
// supervisor would, so a plugin that only watched its parent's pid would
// see a live parent. 15 seconds after the last kill, none of the plugins
// runs.
func TestConduitKilledAtRandom(t *testing.T) {
	const starts = 50
	plugins := []string{binary("connkit-generator"), binary("connkit-log"), binary("connkit-postgres"), binary("connkit-jsonl")}
	pipeline := pipelineFile(1_000_000, nil, "log", nil)
	adoptOrphans(t)
	bin := conduitBin(t)
	t.Cleanup(func() { killAndReap(t, plugins) })
	var atKill, beforeAPI int
	for i := range starts {
		// A fifth of the kills come as soon as Conduit runs, the rest
		// within the 3 seconds in which it launches and runs its plugins.
		delay := time.Duration(rand.Int64N(int64(3 * time.Second)))
		if i%5 == 0 {
			delay = 0
		}
		type result struct {
			s   *conduitpkg.Server
			err error
		}
		started := make(chan result, 1)
		go func() {
			s, err := conduitpkg.Start(conduitpkg.Options{Bin: bin, Dir: t.TempDir(), Pipeline: pipeline, Plugins: plugins})
			started <- result{s, err}
		}()
		kill := time.After(delay)
		for killed := false; !killed; {
			select {
			case r := <-started:
				if r.err != nil {
					t.Fatalf("start %d: %v", i, r.err)
				}
				<-kill
				atKill += len(descendantsRunning(t, r.s.Pid(), plugins))
				r.s.Kill()
				killed = true
			case <-kill:
				// Conduit's API has not started yet: kill it as soon as it runs.
				for !killed {
					if pids := childrenRunning(t, os.Getpid(), bin); len(pids) > 0 {
						atKill += len(descendantsRunning(t, pids[0], plugins))
						is.New(t).NoErr(syscall.Kill(pids[0], syscall.SIGKILL))
						killed = true
						beforeAPI++
					} else {
						time.Sleep(time.Millisecond)
					}
				}
				if r := <-started; r.err == nil {
					r.s.Kill() // it was killed as Start returned
				}
			}
		}
	}
	t.Logf("%d starts of Conduit killed, %d before its API started; %d plugins were running at the kills", starts, beforeAPI, atKill)
	time.Sleep(15 * time.Second)
	var left []string
	for _, p := range plugins {
		for _, pid := range running(t, p) {
			left = append(left, fmt.Sprintf("%s (pid %d)", filepath.Base(p), pid))
		}
	}
	if len(left) > 0 {
		t.Fatalf("15 s after the last of %d kills of Conduit, %d plugins still run: %s", starts, len(left), strings.Join(left, ", "))
	}
}

// descendantsRunning returns the running processes of bins that are
// children of pid.
func descendantsRunning(t *testing.T, pid int, bins []string) []int {
	t.Helper()
	var out []int
	for _, b := range bins {
		out = append(out, childrenRunning(t, pid, b)...)
	}
	return out
}

// running returns every running process of bin, whatever its parent.
func running(t *testing.T, bin string) []int {
	t.Helper()
	return processes(t, bin, func(int) bool { return true })
}

// killAndReap kills the processes of bins still running and reaps the
// test's exited children among them, so that the test leaves nothing
// behind.
func killAndReap(t *testing.T, bins []string) {
	for _, b := range bins {
		for _, pid := range running(t, b) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if ppid, _, ok := procStat(pid); ok && ppid == os.Getpid() && strings.HasPrefix(string(comm), "connkit-") {
			var status syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &status, 0, nil)
		}
	}
}

// adoptOrphans makes the test process the subreaper of its descendants
// for the rest of the test: a process whose parent dies becomes the test's
// child, so the test can wait for it and see how it ended.
func adoptOrphans(t *testing.T) {
	t.Helper()
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Skipf("cannot become a subreaper: %v", errno)
	}
	t.Cleanup(func() { syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0) })
}

// childrenRunning returns the processes running bin whose parent is ppid.
func childrenRunning(t *testing.T, ppid int, bin string) []int {
	t.Helper()
	return processes(t, bin, func(parent int) bool { return parent == ppid })
}

// processes returns the running processes of bin whose parent pid
// satisfies parentOK.
func processes(t *testing.T, bin string, parentOK func(int) bool) []int {
	t.Helper()
	want, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc to find plugin processes in: %v", err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		parent, state, ok := procStat(pid)
		if !ok || !parentOK(parent) || state == "Z" {
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == want {
			out = append(out, pid)
		}
	}
	return out
}

// alive reports whether process pid runs: it exists and is not a zombie,
// which an exited orphan stays until its new parent reaps it.
func alive(pid int) bool {
	_, state, ok := procStat(pid)
	return ok && state != "Z"
}

// procStat returns the parent and state of process pid from /proc.
func procStat(pid int) (ppid int, state string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(fields[1])
	return ppid, fields[0], err == nil
}
