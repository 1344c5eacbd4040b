package plugin

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
)

// A plugin dies with its host. Conduit v0.14 starts a plugin with
// hashicorp/go-plugin, which gives the child Conduit's own stdin (not a pipe
// Conduit holds, so its end of file says nothing; it may even be /dev/null)
// and sets no parent-death signal. A Conduit killed with SIGKILL therefore
// leaves its plugins running, holding what their connectors hold: a
// Postgres source's replication slot stays in use, and every restart of
// the pipeline fails on it.
//
// Three signals together cover every moment the host can die at:
//
//   - After the plugin starts, the kernel gives it a new parent (init, or a
//     subreaper), so os.Getppid no longer returns parentAtStart. That is
//     the host's death and nothing else, whatever ended it. The plugin asks
//     every parentPoll, and at once when parentDeathSignal arrives.
//   - On Linux, a plugin process (one started with go-plugin's magic
//     cookie) asks the kernel for parentDeathSignal when its parent dies,
//     before it reads parentAtStart: a parent that dies after that either
//     signals or is seen by the first check, made once the plugin listens
//     for the signal. The kernel also sends it when the thread that started
//     the plugin exits while its process lives on; the parent is unchanged
//     then, and the plugin ignores it.
//   - A parent that died before the plugin read parentAtStart cannot be
//     told from a live one that way: parentAtStart is then already init or
//     a subreaper, and a Conduit that runs as pid 1 in a container is a
//     live parent with pid 1. Such a host never read the plugin's
//     handshake, so it never connects: a plugin that no host connected to
//     within hostConnectTimeout of its start exits (see connected.go).
//
// The end of the plugin's gRPC connections is not used: gRPC clients close
// an idle connection (after 30 minutes by default) and dial again for the
// next call, so a closed connection does not mean a dead host.

// parentAtStart is the process that started the plugin, read as early as
// the process can, once the parent-death signal is asked for.
var parentAtStart = func() int {
	if os.Getenv(pconnector.HandshakeConfig.MagicCookieKey) != "" {
		askParentDeathSignal()
	}
	return os.Getppid()
}()

// parentPoll is how often the plugin looks at its parent process.
const parentPoll = 500 * time.Millisecond

// parentGone returns once getppid no longer returns parent, saying why; it
// asks at once and again at every tick and signal. It returns "" if ctx
// ends first.
func parentGone(ctx context.Context, parent int, getppid func() int, ticks <-chan time.Time, signals <-chan os.Signal) string {
	for {
		if now := getppid(); now != parent {
			return fmt.Sprintf("the process that started the plugin (pid %d) has exited; its parent is now pid %d", parent, now)
		}
		select {
		case <-ctx.Done():
			return ""
		case <-ticks:
		case <-signals:
		}
	}
}

// watchParent returns a function that waits until the parent process has
// gone, as parentGone does, polling os.Getppid and listening for
// parentDeathSignal. It returns nil when the parent is pid 1, which may be
// a Conduit running as a container's init, or init itself adopting a
// plugin whose host already exited: the plugin cannot tell them apart by
// pid, and leaves the second case to hostConnectTimeout.
func watchParent(parent int, getppid func() int) func(context.Context) string {
	if parent <= 1 {
		return nil
	}
	return func(ctx context.Context) string {
		t := time.NewTicker(parentPoll)
		defer t.Stop()
		var signals chan os.Signal
		if parentDeathSignal != nil {
			signals = make(chan os.Signal, 1)
			signal.Notify(signals, parentDeathSignal)
			defer signal.Stop(signals)
		}
		return parentGone(ctx, parent, getppid, t.C, signals)
	}
}
