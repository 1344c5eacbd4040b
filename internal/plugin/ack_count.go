package plugin

import "sync/atomic"

// ackCount is how many records Conduit has acked on a source's Run stream:
// the acker adds to it without ever waiting, and the owner loop reads it
// when changed tells it to.
type ackCount struct {
	n       atomic.Int64
	changed chan struct{} // holds a token when n changed since it was last read
}

func newAckCount() *ackCount { return &ackCount{changed: make(chan struct{}, 1)} }

// add counts n more acked records.
func (c *ackCount) add(n int) {
	c.n.Add(int64(n))
	select {
	case c.changed <- struct{}{}:
	default: // a token is already there
	}
}

// total returns how many records were acked.
func (c *ackCount) total() int { return int(c.n.Load()) }
