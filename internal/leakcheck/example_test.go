package leakcheck_test

import (
	"fmt"
	"time"

	"github.com/connkit/connkit/internal/leakcheck"
)

// watch stands for a library's worker that, once started, runs for the life
// of the process.
func watch(running chan<- struct{}, stop <-chan struct{}) {
	close(running)
	<-stop
}

// A goroutine that runs one of the functions named is not a leak.
func ExampleGoroutines_Leaked() {
	before := leakcheck.Snapshot()
	running, stop := make(chan struct{}), make(chan struct{})
	go watch(running, stop)
	<-running
	fmt.Println(len(before.Leaked(0)), "leaked")
	fmt.Println(len(before.Leaked(0, "github.com/connkit/connkit/internal/leakcheck_test.watch")), "leaked when ignored")
	close(stop)
	fmt.Println(len(before.Leaked(time.Minute)), "leaked once it ends")
	// Output:
	// 1 leaked
	// 0 leaked when ignored
	// 0 leaked once it ends
}
