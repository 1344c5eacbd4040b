package plugin

import (
	"bytes"

	"github.com/conduitio/conduit-commons/opencdc"
)

// stopRequest asks the owner loop to hand batches out without waiting and
// to close done once the record at last has been through the worker
// (written and acked, or sent): at once if last is empty.
type stopRequest struct {
	last opencdc.Position
	done chan struct{}
}

// stopList are the Stops waiting for their record to be through the
// worker, and what the owner took and the worker finished, in records.
type stopList struct {
	waiting   []pendingStop
	taken     int // records taken from the inbox
	through   int // records through the worker, their acks sent
	lastTaken opencdc.Position
}

// pendingStop is a Stop waiting for the record at its position: upTo is
// how many records were taken from the inbox up to and including it, 0
// until it is taken.
type pendingStop struct {
	stopRequest
	upTo int
}

// add takes a Stop in, releasing it at once if its record is through.
func (l *stopList) add(r stopRequest) {
	s := pendingStop{stopRequest: r}
	if len(r.last) > 0 && bytes.Equal(r.last, l.lastTaken) {
		s.upTo = l.taken
	}
	l.waiting = append(l.waiting, s)
	l.release()
}

// took notes the records taken from the inbox.
func (l *stopList) took(recs []opencdc.Record) {
	for i := range l.waiting {
		if l.waiting[i].upTo > 0 {
			continue
		}
		for k, r := range recs {
			if bytes.Equal(r.Position, l.waiting[i].last) {
				l.waiting[i].upTo = l.taken + k + 1
			}
		}
	}
	l.taken += len(recs)
	if len(recs) > 0 {
		l.lastTaken = recs[len(recs)-1].Position
	}
}

// reached notes that the records taken up to through have been through
// the worker, their acks sent.
func (l *stopList) reached(through int) {
	l.through = through
	l.release()
}

// release closes the Stops whose record is through the worker.
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
