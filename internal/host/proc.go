package host

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ProcStat is what Linux's /proc/PID/stat says of a process.
type ProcStat struct {
	PPid int // its parent
	// CPU is the processor time it has used, user and system; ReapedCPU
	// that of its children that have ended and that it has waited for.
	CPU, ReapedCPU time.Duration
}

// clockTicks is the unit of /proc's times: USER_HZ, 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// ReadProcStat reads /proc/PID/stat.
func ReadProcStat(pid int) (ProcStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcStat{}, fmt.Errorf("host: process %d: %w", pid, err)
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from the last ')'. ppid is field 4; utime, stime, cutime and cstime
	// are fields 14 to 17.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 15 {
		return ProcStat{}, fmt.Errorf("host: process %d: malformed /proc/%d/stat", pid, pid)
	}
	var n [5]int64
	for i, f := range []string{fields[1], fields[11], fields[12], fields[13], fields[14]} {
		if n[i], err = strconv.ParseInt(f, 10, 64); err != nil {
			return ProcStat{}, fmt.Errorf("host: process %d: /proc/%d/stat: %w", pid, pid, err)
		}
	}
	tick := func(t int64) time.Duration { return time.Duration(t) * time.Second / clockTicks }
	return ProcStat{PPid: int(n[0]), CPU: tick(n[1] + n[2]), ReapedCPU: tick(n[3] + n[4])}, nil
}

// ProcessRSS returns the resident set size of a process in bytes, VmRSS of
// /proc/PID/status.
func ProcessRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("host: process %d: %w", pid, err)
	}
	_, rest, ok := bytes.Cut(b, []byte("\nVmRSS:"))
	if !ok {
		return 0, fmt.Errorf("host: process %d has no resident set (a zombie?)", pid)
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(line)), " kB"), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("host: process %d: VmRSS: %w", pid, err)
	}
	return kb << 10, nil
}

// ChildPids returns the running children of a process, from the children
// lists of its threads in /proc; none if it has ended.
func ChildPids(pid int) []int {
	lists, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var pids []int
	for _, path := range lists {
		b, _ := os.ReadFile(path)
		for _, f := range strings.Fields(string(b)) {
			if child, err := strconv.Atoi(f); err == nil {
				pids = append(pids, child)
			}
		}
	}
	return pids
}
