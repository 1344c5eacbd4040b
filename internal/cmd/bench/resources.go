package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/connkit/connkit/internal/conduit"
	"github.com/connkit/connkit/internal/host"
	"github.com/jackc/pgx/v5"
)

// resourceUse is what a group of processes used over a measurement window, what
// Conduit's benchmark tool (benchi) reports of each container: processor
// time, user and system, and memory, here the peak of the group's summed
// resident sets sampled during the window.
type resourceUse struct {
	cpu     time.Duration
	peakRSS int64 // bytes
	ok      bool  // the group was there to measure
}

// processGroup reads a group of processes at a moment: their processor
// time so far and their summed resident sets; ok is false if none is
// running.
type processGroup func() (cpu time.Duration, rss int64, ok bool)

// processes is the group of the given processes, each alone.
func processes(pids ...int) processGroup {
	return func() (cpu time.Duration, rss int64, ok bool) {
		for _, pid := range pids {
			st, err := host.ReadProcStat(pid)
			if err != nil {
				continue
			}
			r, _ := host.ProcessRSS(pid)
			cpu, rss, ok = cpu+st.CPU, rss+r, true
		}
		return cpu, rss, ok
	}
}

// processTree is a server and its children, as PostgreSQL's postmaster and
// its backends: its processor time includes that of the children that have
// ended meanwhile, which the server has waited for, so that a backend
// ending inside the window takes its time along.
func processTree(root int) processGroup {
	return func() (time.Duration, int64, bool) {
		st, err := host.ReadProcStat(root)
		if err != nil {
			return 0, 0, false
		}
		cpu, rss, _ := processes(append([]int{root}, host.ChildPids(root)...)...)()
		return cpu + st.ReapedCPU, rss, true
	}
}

// sampling measures groups of processes from its start to finish: the
// difference of processor time, and the peak resident set sampled every
// interval.
type sampling struct {
	groups []processGroup
	start  []resourceUse
	peak   []int64
	mu     sync.Mutex
	stop   chan struct{}
	done   chan struct{}
}

// startSampling takes the first reading of every group and samples their
// resident sets every interval until finish.
func startSampling(interval time.Duration, groups ...processGroup) *sampling {
	s := &sampling{groups: groups, start: make([]resourceUse, len(groups)), peak: make([]int64, len(groups)),
		stop: make(chan struct{}), done: make(chan struct{})}
	for i, g := range groups {
		cpu, rss, ok := g()
		s.start[i], s.peak[i] = resourceUse{cpu: cpu, ok: ok}, rss
	}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *sampling) sample() []resourceUse {
	now := make([]resourceUse, len(s.groups))
	for i, g := range s.groups {
		cpu, rss, ok := g()
		now[i] = resourceUse{cpu: cpu, ok: ok}
		s.mu.Lock()
		s.peak[i] = max(s.peak[i], rss)
		s.mu.Unlock()
	}
	return now
}

// finish takes the last reading and returns each group's resourceUse over the
// window; a group missing at either end is not ok.
func (s *sampling) finish() []resourceUse {
	close(s.stop)
	<-s.done
	end := s.sample()
	out := make([]resourceUse, len(s.groups))
	for i := range s.groups {
		out[i] = resourceUse{cpu: end[i].cpu - s.start[i].cpu, peakRSS: s.peak[i], ok: s.start[i].ok && end[i].ok}
	}
	return out
}

// cellGroups are the groups of processes a cell measures in Conduit s:
// Conduit, the plugins it started from dir, and PostgreSQL, that is the
// server pgServer and its backends (none if pgServer is 0).
func cellGroups(s *conduit.Server, dir string, pgServer int) []processGroup {
	postgres := processes()
	if pgServer != 0 {
		postgres = processTree(pgServer)
	}
	return []processGroup{processes(s.Pid()), processes(pluginPids(dir)...), postgres}
}

// pluginPids returns the processes started from a Conduit directory's
// connectors/: its standalone plugins.
func pluginPids(dir string) []int {
	prefix := filepath.Join(dir, "connectors") + "/"
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var pids []int
	for _, path := range procs {
		cmdline, err := os.ReadFile(path)
		if err != nil || !strings.HasPrefix(string(cmdline), prefix) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// postmaster returns the PostgreSQL server process behind conn, the parent
// of its backend, if the server runs on this machine; else 0.
func postmaster(ctx context.Context, conn *pgx.Conn) (int, error) {
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return 0, err
	}
	st, err := host.ReadProcStat(backend)
	if err != nil {
		return 0, nil
	}
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(st.PPid) + "/comm")
	if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
		return 0, nil
	}
	return st.PPid, nil
}
