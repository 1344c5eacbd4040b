package plugin

import (
	"time"

	"github.com/connkit/connkit/batcher"
)

// What a server holds ahead of its connector (destination) or of Conduit
// (source) when the batching policy sets no limit: enough for large batches
// and for collecting the next batch while one is written, little enough
// that records do not wait long behind it. Records in a plugin are latency:
// in Conduit's default engine they count as in flight from the source's
// read on.
const (
	defaultHoldCount = 2048
	defaultHoldBytes = 8 << 20
)

// holdFor returns the bound on what a server holds under policy p while
// its flow may have n batches at once: n+1 batches' worth, n being
// handled while the next is collected, and no more bytes than
// maxHoldBytes for more than one batch in the flow. A server passes it
// by what its reader's inbox may hold when the owner takes it, and again
// by what the reader receives or reads after that: each less than 128
// records and 128 KiB (inboxCount, inboxBytes) plus one message or Read.
func holdFor(p batcher.Policy, n int) batcher.Hold {
	h := batcher.Hold{Count: defaultHoldCount, Bytes: defaultHoldBytes}
	if p.Count > 0 {
		h.Count = (n + 1) * p.Count
	}
	if p.Bytes > 0 {
		h.Bytes = min((n+1)*p.Bytes, max(2*p.Bytes, maxHoldBytes))
	}
	return h
}

// maxHoldBytes is the most bytes a server holds for Writes in flight
// together, unless two batches are more.
const maxHoldBytes = 32 << 20

// aheadTime is how long what a reader has taken ahead of the owner keeps
// the worker busy, once the worker's pace is measured: long enough that a
// fast worker gets many records a wake-up, short enough that before a slow
// one records wait a few of its batches at most, not a fixed number of
// them (see aheadOf).
const aheadTime = time.Millisecond

// aheadOf returns how many records a reader may take ahead of the owner
// under policy p, for a worker that handles records at perSecond records per
// second: what it handles in aheadTime, at least a batch.
func aheadOf(p batcher.Policy, perSecond float64) int {
	return max(p.Count, int(perSecond*aheadTime.Seconds()+0.5))
}
