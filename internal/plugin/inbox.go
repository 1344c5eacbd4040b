package plugin

import (
	"sync"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
)

// The most a Run's reader may receive (destination) or read (source) ahead
// of its owner loop: it goes on no further while its inbox holds this many
// records or bytes (as recordSize measures them), or the fewer records the
// owner sets (see aheadOf). The owner takes the whole inbox at its next
// wake-up, so unless a message or read brings more at once, the cap is
// reached only when the owner has no room, and then it is what passes the
// hold bound (see holdFor).
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

	mu         sync.Mutex
	records    []opencdc.Record
	sizes      []int // each record's size, as recordSize measures it
	spareSizes []int // the sizes the last take returned, collected in again at the next
	timed      bool  // note when records came, in came
	came       []arrival
	spareCame  []arrival
	bytes      int
	limit      int // records the inbox holds before the reader waits: 1 to inboxCount
	ended      bool
	err        error // why the reader ended
}

// newInbox returns an empty inbox that holds limit records (within 1 and
// inboxCount) before its reader waits; timed, it notes when they came.
func newInbox(limit int, timed bool) *inbox {
	return &inbox{ready: make(chan struct{}, 1), taken: make(chan struct{}, 1), limit: min(max(limit, 1), inboxCount), timed: timed}
}

// setLimit sets how many records the inbox holds before the reader waits,
// within 1 and inboxCount.
func (b *inbox) setLimit(n int) {
	n = min(max(n, 1), inboxCount)
	b.mu.Lock()
	raised := n > b.limit
	b.limit = n
	b.mu.Unlock()
	if raised {
		notify(b.taken) // a waiting reader looks again
	}
}

// put adds records, which the owner may take from then on. It returns once
// the inbox is below its cap, true, or once quit is closed, false: the
// owner has returned and takes nothing more.
func (b *inbox) put(records []opencdc.Record, quit <-chan struct{}) bool {
	b.mu.Lock()
	for _, r := range records {
		n := recordSize(r)
		b.sizes = append(b.sizes, n)
		b.bytes += n
	}
	b.records = append(b.records, records...)
	if b.timed {
		b.came = append(b.came, arrival{len(records), time.Now()})
	}
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

// waiting reports whether records wait to be taken.
func (b *inbox) waiting() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.records) > 0
}

func (b *inbox) lockedFull() bool {
	return len(b.records) >= b.limit || b.bytes >= inboxBytes
}

// end records that the reader has ended, and why: take reports it with
// the last records put.
func (b *inbox) end(err error) {
	b.mu.Lock()
	b.ended, b.err = true, err
	b.mu.Unlock()
	notify(b.ready)
}

// taken is what a take of an inbox returns: everything put and not yet
// taken, with each record's size as recordSize measured it (valid until
// the next take: batcher.AddSized need not measure again) and, if the
// inbox is timed, when they came, in runs of records put together
// (valid until the next take); and whether the reader has ended (and
// why) after putting them.
type taken struct {
	records []opencdc.Record
	sizes   []int
	came    []arrival
	ended   bool
	err     error
}

// take removes and returns everything put and not yet taken, nothing if
// there is nothing to take. reuse is an earlier take's slice of records
// the caller is done with, or nil: the inbox collects in it again unless a
// large message has grown it past twice the cap, so that it keeps no such
// memory.
func (b *inbox) take(reuse []opencdc.Record) taken {
	clear(reuse) // let its records go
	if cap(reuse) > 2*inboxCount {
		reuse = nil
	}
	b.mu.Lock()
	t := taken{records: b.records, sizes: b.sizes, came: b.came, ended: b.ended, err: b.err}
	spare, spareCame := b.spareSizes, b.spareCame
	if cap(spare) > 2*inboxCount {
		spare, spareCame = nil, nil
	}
	b.records, b.sizes, b.spareSizes, b.came, b.spareCame, b.bytes = reuse[:0], spare[:0], t.sizes, spareCame[:0], t.came, 0
	b.mu.Unlock()
	notify(b.taken)
	return t
}

// notify leaves a signal in c, a channel with a buffer of one, unless one
// is already waiting there.
func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
