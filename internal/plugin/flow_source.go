package plugin

import (
	"context"
	"fmt"
	"sync"
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

	heldSince time.Time // when a due batch began to wait for acks; zero if none waits
}

// maxHoldBack is the longest a due batch waits for Conduit's acks.
const maxHoldBack = 10 * time.Millisecond

// conduitAcks follows the messages sent until Conduit has acked them
// wholly: the owner loop notes each message it sends, the acker each ack
// request, and the owner reads what they tell when notified: whether
// Conduit acks a message whole or record by record, and how long the last
// message took to be acked.
type conduitAcks struct {
	notice chan struct{} // holds one notice at most: the owner reads the state, not the notices

	mu        sync.Mutex
	unacked   []sentMessage // messages sent and not wholly acked, oldest first
	done      int           // records of unacked[0] acked
	byMessage bool          // the last message of several records was acked in one request
	roundTrip time.Duration // how long the last message wholly acked took, from its send
}

// sentMessage is a message sent: how many records, and when.
type sentMessage struct {
	size int
	at   time.Time
}

func newConduitAcks() *conduitAcks {
	// Messages count as acked whole until one is seen acked record by record.
	return &conduitAcks{notice: make(chan struct{}, 1), byMessage: true}
}

// sent notes a message of n records sent at at.
func (a *conduitAcks) sent(n int, at time.Time) {
	a.mu.Lock()
	a.unacked = append(a.unacked, sentMessage{size: n, at: at})
	a.mu.Unlock()
}

// acked notes one ack request of n records.
func (a *conduitAcks) acked(n int) {
	a.mu.Lock()
	for left := n; left > 0 && len(a.unacked) > 0; {
		m := a.unacked[0]
		k := min(left, m.size-a.done)
		whole := a.done == 0 && k == m.size
		a.done += k
		left -= k
		if a.done < m.size {
			break
		}
		if m.size > 1 {
			a.byMessage = whole
		}
		a.roundTrip = time.Since(m.at)
		a.unacked, a.done = a.unacked[1:], 0
	}
	a.mu.Unlock()
	select {
	case a.notice <- struct{}{}:
	default:
	}
}

// state returns how many messages are not wholly acked, whether Conduit
// acks messages whole, and how long the last message took to be acked.
func (a *conduitAcks) state() (unacked int, byMessage bool, roundTrip time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.unacked), a.byMessage, a.roundTrip
}

// holdBack returns how much longer a due batch waits for Conduit's acks
// at now: 0 if it goes now.
func (f *sourceFlow) holdBack(now time.Time, draining bool) time.Duration {
	if draining || f.out.Complete() {
		return 0
	}
	unacked, byMessage, roundTrip := f.acks.state()
	if unacked == 0 || !byMessage {
		return 0
	}
	if f.heldSince.IsZero() {
		f.heldSince = now
	}
	return max(0, min(maxHoldBack, roundTrip)-now.Sub(f.heldSince))
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
				f.acks.sent(len(batch), now) // before its acks can come
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
			recs, sizes, ended, err := f.inbox.take(spare)
			spare = recs
			for i, r := range recs {
				f.out.AddSized(r, sizes[i], now)
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
		case <-f.acks.notice: // acks came: a batch held back for them may go
		case err := <-f.ackFailed:
			return err
		case <-ctxDone:
			return f.ctx.Err() // records not sent were never acked: the source reads them again after a restart
		case <-wake:
		}
		now = time.Now() // once per wake-up
	}
}
