package host

import (
	"os"
	"testing"
	"time"
)

// Busy work shows up as processor time.
func TestProcessCPUTime(t *testing.T) {
	before, err := processCPUTime(os.Getpid())
	if err != nil {
		t.Skip(err) // no /proc
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		now, err := processCPUTime(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if now > before {
			return
		}
	}
	t.Fatal("10 s of busy work and the processor time did not advance")
}
