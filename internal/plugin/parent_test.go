package plugin

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/matryer/is"
)

// The parent is gone at the first look that finds another one, and not
// before: the plugin looks at once, then at every tick or signal.
func TestParentGone(t *testing.T) {
	is := is.New(t)
	ppids := []int{100, 100, 100, 1}
	var calls atomic.Int32
	getppid := func() int { return ppids[calls.Add(1)-1] }
	ticks := make(chan time.Time)
	signals := make(chan os.Signal)
	gone := make(chan string, 1)
	go func() { gone <- parentGone(t.Context(), 100, getppid, ticks, signals) }()
	ticks <- time.Time{}       // taken only while parentGone still waits
	signals <- syscall.SIGUSR1 // a thread of the parent exited, not the parent
	ticks <- time.Time{}
	why := <-gone
	is.True(strings.Contains(why, "(pid 100) has exited"))
	is.True(strings.Contains(why, "now pid 1"))
	is.Equal(calls.Load(), int32(4))
}

// A parent already gone when the plugin starts watching is found without
// waiting for a tick.
func TestParentGoneBeforeWatching(t *testing.T) {
	is := is.New(t)
	why := parentGone(t.Context(), 100, func() int { return 1 }, nil, nil)
	is.True(strings.Contains(why, "now pid 1"))
}

// Watching the parent ends, with no reason, when its context does.
func TestParentGoneEndsWithContext(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	is.Equal(parentGone(ctx, 100, func() int { return 100 }, nil, nil), "")
}

// A plugin whose parent is pid 1 cannot tell by its parent when its host
// exits, and does not watch it.
func TestWatchParentOfInit(t *testing.T) {
	is := is.New(t)
	is.True(watchParent(1, func() int { return 1 }) == nil)
	is.True(watchParent(0, func() int { return 0 }) == nil)
	is.True(watchParent(42, func() int { return 42 }) != nil)
}

// A host that never connects is gone once the timeout passes; one that
// connects is not.
func TestNoHostWithin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		start := time.Now()
		why := noHostWithin(t.Context(), newConnections(), 10*time.Second)
		is.Equal(time.Since(start), 10*time.Second)
		is.True(strings.Contains(why, "no host connected within 10s"))

		c := newConnections()
		c.TagConn(t.Context(), nil)
		c.TagConn(t.Context(), nil) // a second connection changes nothing
		is.Equal(noHostWithin(t.Context(), c, 10*time.Second), "")
	})
}
