package host

import (
	"errors"
	"time"
)

// CPUTime is the processor time the plugin process has used so far, user
// and system. It needs Linux's /proc.
func (p *Plugin) CPUTime() (time.Duration, error) {
	rc := p.client.ReattachConfig()
	if rc == nil || rc.Pid == 0 {
		return 0, errors.New("host: the plugin is not running")
	}
	st, err := ReadProcStat(rc.Pid)
	return st.CPU, err
}
