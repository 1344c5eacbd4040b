package host

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUTime is the processor time the plugin process has used so far, user
// and system. It needs Linux's /proc.
func (p *Plugin) CPUTime() (time.Duration, error) {
	rc := p.client.ReattachConfig()
	if rc == nil || rc.Pid == 0 {
		return 0, errors.New("host: the plugin is not running")
	}
	return processCPUTime(rc.Pid)
}

// clockTicks is the unit of /proc's times: USER_HZ, 100 on every Linux
// architecture Go supports.
const clockTicks = 100

func processCPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("host: processor time: %w", err)
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from the last ')'. utime and stime are fields 14 and 15.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("host: processor time: malformed /proc/%d/stat", pid)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("host: processor time: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
