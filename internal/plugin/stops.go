package plugin

import (
	"bytes"

	"github.com/conduitio/conduit-commons/opencdc"
)

// stopRequest asks the owner loop to hand batches out without waiting and
// to close done once the record at last has been through the flow
// (written and acked, or sent): at once if last is empty.
type stopRequest struct {
	last opencdc.Position
	done chan struct{}
}

// stopList are the Stops waiting for their record to be through the
// flow, and what the owner collected and the flow has through, in records.
type stopList struct {
	waiting       []pendingStop
	count         int // records collected from the inbox
	through       int // records through the flow, their acks sent
	lastCollected opencdc.Position
}

// pendingStop is a Stop waiting for the record at its position: upTo is
// how many records were collected from the inbox up to and including it, 0
// until it is collected.
type pendingStop struct {
	stopRequest
	upTo int
}

// add takes a Stop in, releasing it at once if its record is through.
func (l *stopList) add(r stopRequest) {
	s := pendingStop{stopRequest: r}
	if len(r.last) > 0 && bytes.Equal(r.last, l.lastCollected) {
		s.upTo = l.count
	}
	l.waiting = append(l.waiting, s)
	l.release()
}

// collected notes the records the owner collected from the inbox.
func (l *stopList) collected(recs []opencdc.Record) {
	for i := range l.waiting {
		if l.waiting[i].upTo > 0 {
			continue
		}
		for k, r := range recs {
			if bytes.Equal(r.Position, l.waiting[i].last) {
				l.waiting[i].upTo = l.count + k + 1
			}
		}
	}
	l.count += len(recs)
	if len(recs) > 0 {
		l.lastCollected = recs[len(recs)-1].Position
	}
}

// reached notes that the records collected up to through have been through
// the flow, their acks sent.
func (l *stopList) reached(through int) {
	l.through = through
	l.release()
}

// release closes the Stops whose record is through the flow.
func (l *stopList) release() {
	kept := l.waiting[:0]
	for _, s := range l.waiting {
		if len(s.last) == 0 || (s.upTo > 0 && l.through >= s.upTo) {
			close(s.done)
			continue
		}
		kept = append(kept, s)
	}
	l.waiting = kept
}
