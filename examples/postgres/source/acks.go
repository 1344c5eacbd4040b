package source

import "sync/atomic"

// acks is what the source has handed out and what Conduit has
// acknowledged of it, shared by the reader's goroutine, Ack and the lag's
// goroutine.
type acks struct {
	confirmed  atomic.Uint64 // the LSN confirmed to the server, only ever raised by acks
	queued     atomic.Int64  // records put in the queue
	acked      atomic.Int64  // records acked
	lastCommit atomic.Int64  // when the transaction of the last change queued committed, in Unix nanoseconds; 0: none yet
	backlog    *backlog      // while measured (stream_lag.go)
}

// confirm raises the confirmed LSN to lsn, if it is greater.
func (a *acks) confirm(lsn uint64) { raise(&a.confirmed, lsn) }

// unacked is how many records queued Conduit has not acknowledged.
func (a *acks) unacked() int64 {
	acked := a.acked.Load()
	return a.queued.Load() - acked
}

// raise sets v to n if n is greater.
func raise(v *atomic.Uint64, n uint64) {
	for {
		old := v.Load()
		if n <= old || v.CompareAndSwap(old, n) {
			return
		}
	}
}
