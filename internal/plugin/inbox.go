package plugin

import (
	"sync"

	"github.com/conduitio/conduit-commons/opencdc"
)

// What a Run's reader may receive (destination) or read (source) ahead of
// its owner loop: it goes on no further while its inbox holds this many
// records or bytes (as recordSize measures them). The owner takes the
// whole inbox at its next wake-up, so unless a message or read brings more
// at once, the cap is reached only when the owner has no room, and then it
// is what passes the hold bound (see holdFor). It is half of what gRPC's
// flow-control window lets Conduit send ahead (see windowSize).
const (
	inboxCount = 128
	inboxBytes = 128 << 10
)

// inbox is what a Run's reader has received or read and its owner loop not
// yet taken, and, once the reader has ended, why. The reader puts records
// in as they come and goes on; the owner takes everything waiting at once,
// so that a burst of messages or reads costs it one wake-up, and a lone
// one reaches it at once.
type inbox struct {
	ready chan struct{} // holds a signal while there may be something to take
	taken chan struct{} // holds a signal once the owner has taken, for a full inbox

	mu      sync.Mutex
	records []opencdc.Record
	bytes   int
	ended   bool
	err     error // why the reader ended
}

func newInbox() *inbox {
	return &inbox{ready: make(chan struct{}, 1), taken: make(chan struct{}, 1)}
}

// put adds records, which the owner may take from then on. It returns once
// the inbox is below its cap, true, or once quit is closed, false: the
// owner has returned and takes nothing more.
func (b *inbox) put(records []opencdc.Record, quit <-chan struct{}) bool {
	n := 0
	for _, r := range records {
		n += recordSize(r)
	}
	b.mu.Lock()
	b.records = append(b.records, records...)
	b.bytes += n
	full := b.lockedFull()
	b.mu.Unlock()
	notify(b.ready)
	for full {
		select {
		case <-b.taken: // maybe an earlier take's signal: check again
		case <-quit:
			return false
		}
		b.mu.Lock()
		full = b.lockedFull()
		b.mu.Unlock()
	}
	return true
}

func (b *inbox) lockedFull() bool {
	return len(b.records) >= inboxCount || b.bytes >= inboxBytes
}

// end records that the reader has ended, and why: take reports it with
// the last records put.
func (b *inbox) end(err error) {
	b.mu.Lock()
	b.ended, b.err = true, err
	b.mu.Unlock()
	notify(b.ready)
}

// take removes and returns everything put and not yet taken, nothing if
// there is nothing to take, and whether the reader has ended (and why)
// after putting them. reuse is an earlier take's slice the caller is done
// with, or nil: the inbox collects in it again unless a large message has
// grown it past twice the cap, so that it keeps no such memory.
func (b *inbox) take(reuse []opencdc.Record) (records []opencdc.Record, ended bool, err error) {
	clear(reuse) // let its records go
	if cap(reuse) > 2*inboxCount {
		reuse = nil
	}
	b.mu.Lock()
	records, ended, err = b.records, b.ended, b.err
	b.records, b.bytes = reuse[:0], 0
	b.mu.Unlock()
	notify(b.taken)
	return records, ended, err
}

// notify leaves a signal in c, a channel with a buffer of one, unless one
// is already waiting there.
func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
