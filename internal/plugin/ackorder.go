package plugin

import (
	"sync"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
)

// ackOrder sends a destination's acks to Conduit in record order while
// several Writes settle their records at once: completion in any order,
// commit in order, as Redpanda Connect's capped checkpointer does. Each
// Write is a job with a sequence number, handed out in record order from
// 0 on. A job's acks go as soon as every earlier job is done; those it
// settles before then wait for it. The oldest job may keep its last acks
// for the next send (see keepAcks). Its methods are safe for concurrent
// use; it sends under its lock, which keeps the sends in order.
type ackOrder struct {
	send func([]pconnector.DestinationRunResponseAck) error

	mu      sync.Mutex
	next    uint64              // the oldest job not done: its acks go as it settles them
	waiting map[uint64]*jobAcks // later jobs' acks, settled before their turn
	kept    []pconnector.DestinationRunResponseAck
	sent    int // records whose acks have been sent
}

// jobAcks are a job's acks, settled and waiting for the jobs before it.
type jobAcks struct {
	acks []pconnector.DestinationRunResponseAck
	done bool // the job has settled every record
}

func newAckOrder(send func([]pconnector.DestinationRunResponseAck) error) *ackOrder {
	return &ackOrder{send: send, waiting: map[uint64]*jobAcks{}}
}

// settled takes acks that job seq settled, after those it settled before:
// they go now if every earlier job is done, and else once they are.
func (a *ackOrder) settled(seq uint64, acks []pconnector.DestinationRunResponseAck) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if seq != a.next {
		a.lockedJob(seq).acks = append(a.lockedJob(seq).acks, acks...)
		return nil
	}
	return a.lockedSend(acks)
}

// keep is settled for the last acks of the oldest job, which go with the
// next send instead of now.
func (a *ackOrder) keep(seq uint64, acks []pconnector.DestinationRunResponseAck) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if seq != a.next {
		a.lockedJob(seq).acks = append(a.lockedJob(seq).acks, acks...)
		return
	}
	a.kept = append(a.kept, acks...)
}

// done notes that job seq has settled every record, and sends the acks of
// the later jobs that waited for it, up to the first that is not done.
func (a *ackOrder) done(seq uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if seq != a.next {
		a.lockedJob(seq).done = true
		return nil
	}
	var acks []pconnector.DestinationRunResponseAck
	for a.next++; ; a.next++ {
		j, ok := a.waiting[a.next]
		if !ok {
			break
		}
		delete(a.waiting, a.next)
		acks = append(acks, j.acks...)
		if !j.done {
			break // the oldest job now: its further acks go as it settles them
		}
	}
	return a.lockedSend(acks)
}

// flush sends the acks kept.
func (a *ackOrder) flush() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	acks := a.kept
	a.kept = nil
	return a.lockedSendNow(acks)
}

// through returns how many records' acks have been sent.
func (a *ackOrder) through() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sent
}

func (a *ackOrder) lockedJob(seq uint64) *jobAcks {
	j, ok := a.waiting[seq]
	if !ok {
		j = &jobAcks{}
		a.waiting[seq] = j
	}
	return j
}

// lockedSend sends the acks kept and then acks, unless acks is empty: the
// kept acks wait for acks to go with.
func (a *ackOrder) lockedSend(acks []pconnector.DestinationRunResponseAck) error {
	if len(acks) == 0 {
		return nil
	}
	if len(a.kept) > 0 {
		acks = append(a.kept, acks...)
		a.kept = nil
	}
	return a.lockedSendNow(acks)
}

func (a *ackOrder) lockedSendNow(acks []pconnector.DestinationRunResponseAck) error {
	if len(acks) == 0 {
		return nil
	}
	a.sent += len(acks)
	return a.send(acks)
}
