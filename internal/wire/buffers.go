package wire

import (
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/mem"
)

// Buffers lends out the buffers messages are encoded into, so that a
// stream's messages reuse memory instead of growing fresh slices each time.
// It is a mem.BufferPool: a message sent as Lent comes back to it once gRPC
// has written it. Its zero value is ready to use and keeps every buffer.
type Buffers struct {
	// MaxKept is the largest capacity kept for reuse, if not 0: a larger
	// buffer, made for an outsized message, is left to the garbage collector.
	MaxKept int

	pool sync.Pool
	last atomic.Int64 // the capacity of the last buffer kept
}

// Get returns a buffer of length n and, when it has to make one, of the
// capacity the last buffer taken back had, which is what the messages
// being encoded grew to. Its contents are not cleared: it is for appending
// to after reslicing to length 0.
func (p *Buffers) Get(n int) *[]byte {
	if b, ok := p.pool.Get().(*[]byte); ok && cap(*b) >= n {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, max(n, int(p.last.Load())))
	return &b
}

// Put takes a buffer back.
func (p *Buffers) Put(b *[]byte) {
	if p.MaxKept > 0 && cap(*b) > p.MaxKept {
		return
	}
	p.last.Store(int64(cap(*b)))
	p.pool.Put(b)
}

var _ mem.BufferPool = (*Buffers)(nil)

// Lent is a message already in its wire form, in a buffer from Buffers that
// goes back to them once gRPC is done with it. The sender gives the buffer
// up when it sends the message.
type Lent struct {
	Buf  *[]byte
	From *Buffers
}
