package source

import (
	"math"
	"slices"
	"sync"
)

// pin keeps the slot's confirmed LSN at or before lsn until release
// records are acknowledged.
type pin struct {
	lsn     uint64
	release int64 // math.MaxInt64 until known
}

// pins are the added tables' pins: set by the reader's goroutine, read by
// Ack and by the stream when it confirms the server's WAL end.
type pins struct {
	mu   sync.Mutex
	list []*pin
}

// add pins the slot at lsn until released.
func (p *pins) add(lsn uint64) *pin {
	h := &pin{lsn: lsn, release: math.MaxInt64}
	p.mu.Lock()
	p.list = append(p.list, h)
	p.mu.Unlock()
	return h
}

// release releases h once n records are acknowledged.
func (p *pins) release(h *pin, n int64) {
	p.mu.Lock()
	h.release = n
	p.mu.Unlock()
}

// cap is lsn, or the lowest LSN pinned if lower, once acked records are
// acknowledged.
func (p *pins) cap(lsn uint64, acked int64) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = slices.DeleteFunc(p.list, func(h *pin) bool { return h.release <= acked })
	for _, h := range p.list {
		lsn = min(lsn, h.lsn)
	}
	return lsn
}

// capped is lsn, or less if a chunk whose rows are not all acknowledged
// needs the slot to stay before it.
func (s *Source) capped(lsn uint64) uint64 {
	if s.adder == nil {
		return lsn
	}
	return s.adder.pins.cap(lsn, s.acks.acked.Load())
}

// pinSlot keeps the slot at its confirmed LSN from now on, until released.
func (a *adder) pinSlot() *pin {
	return a.pins.add(a.s.acks.confirmed.Load())
}

// releaseAfterQueued releases h once every record queued so far is
// acknowledged.
func (a *adder) releaseAfterQueued(h *pin) {
	a.pins.release(h, a.s.acks.queued.Load())
}
