package plugin

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/stats"
)

// hostConnectTimeout is how long a plugin waits, from its start, for its
// host to connect. go-plugin's client dials as soon as it has read the
// plugin's handshake, in milliseconds; a plugin that waited this long has a
// host that will never read it, one that died before the plugin could
// watch it (see parent.go).
const hostConnectTimeout = 10 * time.Second

// connections is a gRPC stats handler that tells when the plugin's server
// accepts its first connection.
type connections struct {
	once  sync.Once
	first chan struct{} // closed at the first connection
}

func newConnections() *connections { return &connections{first: make(chan struct{})} }

func (c *connections) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	c.once.Do(func() { close(c.first) })
	return ctx
}

func (c *connections) HandleConn(context.Context, stats.ConnStats) {}

func (c *connections) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (c *connections) HandleRPC(context.Context, stats.RPCStats) {}

// noHostWithin returns why the host is gone if no connection came within
// timeout, or "" once one came or ctx ended.
func noHostWithin(ctx context.Context, c *connections, timeout time.Duration) string {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.first:
		return ""
	case <-ctx.Done():
		return ""
	case <-t.C:
		return fmt.Sprintf("no host connected within %v of the plugin's start: the process that started it is gone", timeout)
	}
}
