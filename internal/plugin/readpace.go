package plugin

import (
	"sync/atomic"
	"time"
)

// readPace tells from Conduit's acks whether Conduit reads a source's next
// message only once it has acked the last, and if so how long a due batch
// may wait for that ack.
//
// Conduit v0.14's v2 engine handles one message at a time: it reads it,
// has the destination write it, acks it, in a request of its own, and
// only then reads the next. A message sent before that ack only waits in
// the transport and reaches Conduit as small as it was when sent; held
// back until the ack, it grows by what is read meanwhile (group commit),
// and reaches Conduit when Conduit would have read it anyway. Conduit's
// default engine reads on and acks record by record, and Conduit v0.19
// acks what it has stored, in bulk or long after it read: there nothing
// is held back.
//
// Only a busy Conduit is waited for: one whose transport made a Send
// wait, and which has not acked everything sent since. Below its capacity
// every batch goes at once.
//
// It is pure: the owner's loop notes each message sent, each Send's end
// and each ack request, and asks whether a due batch may go. awaiting is
// atomic only so that the acker may read it.
type readPace struct {
	unacked    []sentMessage // sent and not wholly acked, oldest first
	partly     int           // records of unacked[0] acked
	wholes     int           // requests in a row that each acked one message of several records, whole
	turnaround time.Duration // how long Conduit took on the last message wholly acked (see acked)
	lastAck    time.Time     // when that message was acked
	busy       bool          // a Send waited for the transport, and Conduit has not caught up since
	awaiting   atomic.Bool   // a due batch awaits an ack; the source's acker reads it, to wake the loop
	released   bool          // an ack ended the last wait
	missed     int           // waits in a row that ended without the ack
	off        bool          // nothing is held back any more
}

type sentMessage struct {
	n  int
	at time.Time
}

const (
	// byMessage is how many requests in a row must each ack one message
	// of several records, whole, before a due batch waits for acks: a
	// Conduit that acks by record or in bulk now and then acks so by
	// chance.
	byMessage = 3
	// maxHoldBack is the longest a due batch waits for the ack of the
	// message before it: a destination may take long to ack. A Conduit
	// whose turnaround was longer is not waited for at all: Conduit
	// v0.19's v2 engine acks each message whole, but 140 ms or more after
	// it read it, and reads on meanwhile.
	maxHoldBack = 100 * time.Millisecond
	// sendBlocked is how long a Send takes that waited for the transport:
	// Conduit is busy, and a due batch may wait for it at no cost.
	sendBlocked = time.Millisecond
	// maxMissed is how many waits in a row may end without the ack before
	// nothing is held back any more: Conduit acks long after it read.
	maxMissed = 3
)

// sent notes a message of n records sent at at.
func (p *readPace) sent(n int, at time.Time) {
	p.unacked = append(p.unacked, sentMessage{n, at})
}

// sendEnded notes that a Send took took.
func (p *readPace) sendEnded(took time.Duration) {
	if took >= sendBlocked {
		p.busy = true
	}
}

// acked notes one ack request of n positions, received at at. A message
// wholly acked took Conduit from when it could start on it, its send or
// the ack before if that came later, to at: its turnaround, which leaves
// out the time it waited in the transport behind other messages.
func (p *readPace) acked(n int, at time.Time) {
	whole, all := 0, 0 // messages the request completed; the records of the last one, if it acked them all
	for n > 0 && len(p.unacked) > 0 {
		m := p.unacked[0]
		k := min(n, m.n-p.partly)
		p.partly += k
		n -= k
		if p.partly < m.n {
			break
		}
		whole, all = whole+1, 0
		if k == m.n {
			all = k
		}
		p.turnaround = at.Sub(later(m.at, p.lastAck))
		p.lastAck = at
		p.unacked, p.partly = p.unacked[1:], 0
	}
	if len(p.unacked) == 0 {
		p.unacked = nil // let the backing array go
	}
	if whole > 0 && p.awaiting.Load() {
		p.awaiting.Store(false)
		p.released, p.missed = true, 0 // the ack came in time
	}
	switch {
	case whole > 1 || p.partly > 0 || whole == 1 && all == 0:
		p.wholes = 0 // by record, or in bulk
	case whole == 1 && all > 1:
		p.wholes++
	}
	// A request that acks a message of one record says nothing: acking
	// by record or by message looks the same.
}

// mayGo reports whether a due batch may go at now; urgent says it is
// complete, or the owner drains, so that it gains nothing by waiting.
func (p *readPace) mayGo(now time.Time, urgent bool) bool {
	if len(p.unacked) == 0 && !p.released {
		p.busy = false // Conduit caught up
	}
	p.released = false
	until := p.holdUntil()
	switch {
	case urgent || until.IsZero():
		p.awaiting.Store(false)
		return true
	case now.Before(until):
		p.awaiting.Store(true)
		return false
	case p.awaiting.Load(): // waited in vain
		p.awaiting.Store(false)
		p.missed++
		p.off = p.missed >= maxMissed
	}
	return true
}

// holdUntil returns until when a due batch waits for the last message's
// ack, the zero time if it goes now: when Conduit does not ack message by
// message, is not busy, has acked everything sent, or took longer on the
// last message than a batch may wait. A batch waits no longer than twice
// the last turnaround from when Conduit could start on the oldest message
// unacked: its send, or the last ack if that came later.
func (p *readPace) holdUntil() time.Time {
	if p.off || !p.busy || p.wholes < byMessage || len(p.unacked) == 0 || p.turnaround >= maxHoldBack {
		return time.Time{}
	}
	return later(p.unacked[0].at, p.lastAck).Add(min(2*p.turnaround, maxHoldBack))
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
