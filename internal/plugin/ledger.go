package plugin

import (
	"fmt"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
)

// ack is one record's ack to Conduit: positive if Error is empty.
type ack = pconnector.DestinationRunResponseAck

// ledger is a destination's Writes and the acks they owe Conduit. Writes
// end in any order and settle their records in steps (a Write that is
// retried sends what it settled before it waits); the acks go in record
// order, with one Send in flight at a time: what becomes ready while a
// Send is in flight goes together in the next (group commit for acks, as
// http2's write scheduler has one frame write in flight). A Write's acks
// are ready once every earlier Write has settled all of its records.
//
// It is a pure value: no goroutines, clock or locks; the owner loop alone
// calls it, and a fuzz target holds it to a model.
type ledger struct {
	writes   []entry // oldest first: opened, and not yet through
	first    uint64  // the seq of writes[0]
	unready  int     // the index in writes of the first Write whose acks are not all ready
	records  int     // records of every Write opened
	ready    []ack   // the acks of records [sending, readyTo), in order
	readyTo  int     // records whose acks are ready or sent: a prefix
	sending  int     // records whose acks are sent or in the Send in flight
	sent     int     // records whose acks are sent
	inFlight int     // Writes opened and not ended
}

// entry is one Write, as it was handed out, its records from..from+size,
// and the acks it settled that wait for an earlier Write.
type entry struct {
	write
	from    int
	settled int   // records settled
	waiting []ack // settled acks not yet ready
	ended   bool
}

// open notes Write w, of w.size records, the next in record order, and
// returns its sequence number.
func (l *ledger) open(w write) uint64 {
	l.writes = append(l.writes, entry{write: w, from: l.records})
	l.records += w.size
	l.inFlight++
	return l.first + uint64(len(l.writes)-1)
}

// write returns Write seq, nil if the ledger has it no longer (or never
// had it). It is good until the next call that settles or sends.
func (l *ledger) write(seq uint64) *write {
	if seq < l.first || seq-l.first >= uint64(len(l.writes)) {
		return nil
	}
	return &l.writes[seq-l.first].write
}

// anyInFlight reports whether a Write in flight is one f says.
func (l *ledger) anyInFlight(f func(*write) bool) bool {
	for i := range l.writes {
		if e := &l.writes[i]; !e.ended && f(&e.write) {
			return true
		}
	}
	return false
}

// settle takes acks that Write seq settled, for its next records in
// order, and whether the Write has ended, which it may only once it has
// settled every record. It returns how many Writes are done with, oldest
// first: every record of theirs and of the Writes before them settled.
// An error says how the Write broke its part.
func (l *ledger) settle(seq uint64, acks []ack, ended bool) (done int, err error) {
	if seq < l.first || seq-l.first >= uint64(len(l.writes)) {
		return 0, fmt.Errorf("plugin: settled Write %d, which is not in flight", seq)
	}
	e := &l.writes[seq-l.first]
	switch {
	case e.ended:
		return 0, fmt.Errorf("plugin: Write %d settled records after it ended", seq)
	case e.settled+len(acks) > e.size:
		return 0, fmt.Errorf("plugin: Write %d settled %d records of %d", seq, e.settled+len(acks), e.size)
	case ended && e.settled+len(acks) < e.size:
		return 0, fmt.Errorf("plugin: Write %d ended with %d of its %d records settled", seq, e.settled+len(acks), e.size)
	}
	e.settled += len(acks)
	e.waiting = append(e.waiting, acks...)
	if ended {
		e.ended = true
		l.inFlight--
	}
	done = l.advance()
	l.forget()
	return done, nil
}

// advance makes ready the waiting acks of the oldest Writes, up to the
// first that has records not settled, and returns how many Writes it
// made ready whole.
func (l *ledger) advance() (done int) {
	for ; l.unready < len(l.writes); l.unready++ {
		e := &l.writes[l.unready]
		l.ready = append(l.ready, e.waiting...)
		l.readyTo += len(e.waiting)
		e.waiting = nil
		if l.readyTo < e.from+e.size {
			return done
		}
		done++
	}
	return done
}

// next returns the acks to send now, and marks them in flight: every ack
// ready, unless a Send is in flight already or none is ready.
func (l *ledger) next() ([]ack, bool) {
	if l.sending > l.sent || l.readyTo == l.sending {
		return nil, false
	}
	acks := l.ready
	l.ready = nil
	l.sending = l.readyTo
	return acks, true
}

// sentAll notes that the Send in flight has ended, and returns how many
// records' acks have been sent, from the first on.
func (l *ledger) sentAll() (through int) {
	l.sent = l.sending
	l.forget()
	return l.sent
}

// forget drops the oldest Writes that have ended with every ack sent.
func (l *ledger) forget() {
	n := 0
	for n < len(l.writes) && l.writes[n].ended && l.writes[n].from+l.writes[n].size <= l.sent {
		n++
	}
	l.writes = l.writes[:copy(l.writes, l.writes[n:])]
	l.first += uint64(n)
	l.unready -= n // a Write whose acks are sent has them all ready
}

// hasReady reports whether acks are ready and not yet in a Send.
func (l *ledger) hasReady() bool { return l.readyTo > l.sending }

// sendingNow reports whether a Send is in flight.
func (l *ledger) sendingNow() bool { return l.sending > l.sent }

// idle reports whether no Write is in flight and no ack waits to be sent
// or is being sent.
func (l *ledger) idle() bool { return l.inFlight == 0 && l.sent == l.readyTo }
