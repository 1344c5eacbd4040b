package plugin

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
)

// sourceFlow is one source Run's owner loop: it takes everything waiting
// in the reader's inbox at once while the hold bound has room, and hands
// the sender a batch whenever the sender is free, a batch is due and
// Conduit is ready for it. It reads the clock once per wake-up.
//
// Conduit's v2 engine takes a source's next message only once it has acked
// the last, and acks a message whole, in one request. A message sent
// earlier would only wait in gRPC's buffers and travel as a small batch; so
// while Conduit acks messages whole, a due batch waits for the last
// message's acks, and grows by what is read meanwhile (group commit). It
// waits no longer than the last message took to be acked, and never more
// than maxHoldBack: a destination may wait for records before it acks.
// Conduit's default engine reads on and acks record by record: there, as
// before the first ack, for a complete batch, after Stop and at the
// reader's end, nothing waits.
type sourceFlow struct {
	stream    pconnector.SourceRunStreamServer
	out       *batcher.Batcher[opencdc.Record]
	ctx       context.Context
	inbox     *inbox // what the reader read, and why it returned
	ackFailed <-chan error
	acks      *conduitAcks
	flushes   <-chan chan struct{}

	sent      []sentMessage // messages not wholly acked yet, oldest first
	nSent     int64         // records sent
	roundTrip time.Duration // how long the last message wholly acked took, from its send
	heldSince time.Time     // when a due batch began to wait for acks; zero if none waits
}

// maxHoldBack is the longest a due batch waits for Conduit's acks.
const maxHoldBack = 10 * time.Millisecond

// sentMessage is a message sent: upTo is nSent once it was sent.
type sentMessage struct {
	upTo int64
	at   time.Time
}

// conduitAcks is what the acker learns of Conduit's acks for the owner
// loop: how many records are acked, and whether Conduit acks a message
// whole. The owner says what it sends; it reads the rest when notified.
type conduitAcks struct {
	n         atomic.Int64
	byMessage atomic.Bool   // the last message of several records was acked in one request
	notice    chan struct{} // holds one notice at most: the owner reads the state, not the notices

	mu    sync.Mutex
	sizes []int // records in each message sent and not wholly acked, oldest first
	done  int   // records of sizes[0] acked
}

func newConduitAcks() *conduitAcks {
	a := &conduitAcks{notice: make(chan struct{}, 1)}
	a.byMessage.Store(true) // until a message is seen acked record by record
	return a
}

// sent notes a message of n records sent.
func (a *conduitAcks) sent(n int) {
	a.mu.Lock()
	a.sizes = append(a.sizes, n)
	a.mu.Unlock()
}

// acked notes one ack request of n records.
func (a *conduitAcks) acked(n int) {
	a.mu.Lock()
	for left := n; left > 0 && len(a.sizes) > 0; {
		size := a.sizes[0]
		k := min(left, size-a.done)
		whole := a.done == 0 && k == size
		a.done += k
		left -= k
		if a.done < size {
			break
		}
		if size > 1 {
			a.byMessage.Store(whole)
		}
		a.sizes, a.done = a.sizes[1:], 0
	}
	a.mu.Unlock()
	a.n.Add(int64(n))
	select {
	case a.notice <- struct{}{}:
	default:
	}
}

// holdBack returns how much longer a due batch waits for Conduit's acks
// at now: 0 if it goes now.
func (f *sourceFlow) holdBack(now time.Time, draining bool) time.Duration {
	if draining || len(f.sent) == 0 || f.out.Complete() || !f.acks.byMessage.Load() {
		return 0
	}
	if f.heldSince.IsZero() {
		f.heldSince = now
	}
	return max(0, min(maxHoldBack, f.roundTrip)-now.Sub(f.heldSince))
}

// ackedUpTo forgets the messages wholly acked once n records are, and
// measures the last one's round trip.
func (f *sourceFlow) ackedUpTo(n int64, now time.Time) {
	for len(f.sent) > 0 && f.sent[0].upTo <= n {
		f.roundTrip = now.Sub(f.sent[0].at)
		f.sent = f.sent[1:]
	}
}

// run returns when Conduit closes the stream or acks fail (with the
// error), when a send fails, or when reading failed and everything read
// before is sent. After Stop, it goes on for the acks.
func (f *sourceFlow) run() error {
	batches := make(chan []opencdc.Record)
	sent := make(chan error, 1)
	senderDone := make(chan struct{})
	go func() {
		defer close(senderDone)
		for batch := range batches {
			if err := f.stream.Send(pconnector.SourceRunResponse{Records: batch}); err != nil {
				sent <- fmt.Errorf("send records to Conduit: %w", err)
				continue
			}
			sent <- nil
		}
	}()
	defer func() { close(batches); <-senderDone }()

	var (
		timer    = time.NewTimer(time.Hour)
		busy     bool // a message is being sent
		draining bool // send without waiting: Stop was called, or the reader ended
		readDone bool
		readErr  error            // why the reader returned, once readDone
		waiting  []chan struct{}  // Stop's requests, answered once everything read is sent
		spare    []opencdc.Record // the records last taken from the inbox, done with at the next take
		ctxDone  = f.ctx.Done()
	)
	timer.Stop()
	defer timer.Stop()
	now := time.Now()
	for {
		var hold time.Duration // how much longer a due batch waits for acks
		if !busy && (f.out.Due(now) || (draining && f.out.Len() > 0)) {
			if hold = f.holdBack(now, draining); hold == 0 {
				busy, f.heldSince = true, time.Time{}
				batch := f.out.Take()
				f.nSent += int64(len(batch))
				f.sent = append(f.sent, sentMessage{upTo: f.nSent, at: now})
				f.acks.sent(len(batch)) // before its acks can come
				batches <- batch
				continue
			}
		}
		if !busy && readDone && f.out.Len() == 0 {
			for _, w := range waiting {
				close(w)
			}
			waiting = nil
			if readErr != nil {
				return readErr
			}
		}
		var take chan struct{}
		if !readDone && f.out.Room() {
			take = f.inbox.ready
		}
		var wake <-chan time.Time
		switch {
		case hold > 0:
			timer.Reset(hold)
			wake = timer.C
		case !busy && !draining:
			if d, ok := f.out.Wait(now); ok {
				timer.Reset(d)
				wake = timer.C
			}
		}
		select {
		case <-take:
			now = time.Now() // the select may have waited
			recs, ended, err := f.inbox.take(spare)
			spare = recs
			for _, r := range recs {
				f.out.Add(r, now)
			}
			if ended {
				readDone, readErr, draining = true, err, true
			}
			continue // now is read
		case err := <-sent:
			busy = false
			f.out.Done()
			if err != nil {
				return err
			}
		case w := <-f.flushes:
			draining = true
			waiting = append(waiting, w)
		case <-f.acks.notice:
			now = time.Now()
			f.ackedUpTo(f.acks.n.Load(), now)
			continue // now is read
		case err := <-f.ackFailed:
			return err
		case <-ctxDone:
			return f.ctx.Err() // records not sent were never acked: the source reads them again after a restart
		case <-wake:
		}
		now = time.Now() // once per wake-up
	}
}
