package plugin

import (
	"hash/maphash"

	"github.com/conduitio/conduit-commons/opencdc"
)

// A job is what the owner hands the worker: a batch to handle, or the
// acks kept to send.
type job struct {
	kind  jobKind
	batch []opencdc.Record // nil for sendKept
	seq   uint64           // the batch's place among the batches handed out, from 0 on
	// pushedBack tells the owner at once that a Write met a retryable
	// error; nil: nobody listens.
	pushedBack func()
}

type jobKind uint8

const (
	handleBatch jobKind = iota // handle the batch, sending its acks and any kept
	keepBatch                  // handle the batch, keeping its acks and any kept (an ackKeeper's)
	sendKept                   // send the acks kept (an ackKeeper's)
)

// A worker handles the batches the owner hands out, on goroutines that
// the owner keeps for the next (see owner.workOn): one at a time, unless
// the destination's Concurrency allows more. A source's sends each to Conduit: the transport takes it at once
// while Conduit keeps up, and makes the worker wait while Conduit does
// not, so that a busy Conduit gets what was read meanwhile in one
// message. A destination's writes each and acks its records in order
// with the other jobs' (see ackOrder). handle reports whether the
// destination pushed back (a Write met a retryable error).
type worker interface {
	handle(j job) (pushedBack bool, err error)
}

// An ackKeeper is a worker that can keep the acks of a batch (a keepBatch
// job) and send them with the next batch's, in one message (a
// destination's, see keepAcks).
type ackKeeper interface {
	worker
	sendKept() error
}

// keySeed seeds the key hashes of the process.
var keySeed = maphash.MakeSeed()

// keyHash returns a hash of r's key, for keeping the records with one
// key in one lane, or 0 for a record without a key, which has no lane:
// its order to other records is not a key's.
func keyHash(r opencdc.Record) uint64 {
	var key []byte
	switch k := r.Key.(type) {
	case opencdc.RawData:
		key = k
	case opencdc.StructuredData:
		if len(k) > 0 {
			key = k.Bytes() // JSON, its fields sorted: equal keys, equal bytes
		}
	}
	if len(key) == 0 {
		return 0
	}
	return max(maphash.Bytes(keySeed, key), 1)
}
