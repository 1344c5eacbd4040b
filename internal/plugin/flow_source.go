package plugin

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
)

// sourceFlow is one source Run's owner loop: it takes what the reader read
// while the hold bound has room, and hands the sender a batch whenever the
// sender is free, a batch is due and Conduit is ready for it.
//
// Conduit is ready when it has acked every message sent. Conduit's v2
// engine takes a source's next message only once it has acked the last, so
// a message sent earlier would only wait in gRPC's buffers and travel as a
// small batch; held back instead, it grows by what is read meanwhile (group
// commit). A due batch waits for the acks no longer than the last message
// took to be acked, and never more than maxHoldBack: an engine that reads
// on without acking, or a destination that waits for records before it
// acks, gets them after that. Before the first message is acked nothing
// waits; neither does a batch that fills the hold bound, nor one sent after
// Stop or the reader's end.
type sourceFlow struct {
	stream    pconnector.SourceRunStreamServer
	out       *batcher.Batcher[opencdc.Record]
	ctx       context.Context
	reads     <-chan []opencdc.Record // closed when the reader has returned
	readErr   *error                  // why the reader returned, once reads is closed
	ackFailed <-chan error
	acked     *ackCount
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

// ackCount counts the records Conduit has acked. The acker adds; the owner
// loop reads the count when notified.
type ackCount struct {
	n      atomic.Int64
	notice chan struct{} // holds one notice at most: the owner reads the count, not the notices
}

func newAckCount() *ackCount { return &ackCount{notice: make(chan struct{}, 1)} }

func (a *ackCount) add(n int) {
	a.n.Add(int64(n))
	select {
	case a.notice <- struct{}{}:
	default:
	}
}

// holdBack returns how much longer a due batch waits for Conduit's acks
// at now: 0 if it goes now.
func (f *sourceFlow) holdBack(now time.Time, draining bool) time.Duration {
	if draining || len(f.sent) == 0 || !f.out.Room() {
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
		waiting  []chan struct{} // Stop's requests, answered once everything read is sent
		reads    = f.reads
		ctxDone  = f.ctx.Done()
	)
	timer.Stop()
	defer timer.Stop()
	for {
		now := time.Now()
		var hold time.Duration // how much longer a due batch waits for acks
		if !busy && (f.out.Due(now) || (draining && f.out.Len() > 0)) {
			if hold = f.holdBack(now, draining); hold == 0 {
				busy, f.heldSince = true, time.Time{}
				batch := f.out.Take()
				f.nSent += int64(len(batch))
				f.sent = append(f.sent, sentMessage{upTo: f.nSent, at: now})
				batches <- batch
				continue
			}
		}
		if !busy && readDone && f.out.Len() == 0 {
			for _, w := range waiting {
				close(w)
			}
			waiting = nil
			if err := *f.readErr; err != nil {
				return err
			}
		}
		var take <-chan []opencdc.Record
		if !readDone && f.out.Room() {
			take = reads
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
		case recs, ok := <-take:
			if !ok {
				readDone, draining = true, true
				continue
			}
			now := time.Now() // the select may have waited
			for _, r := range recs {
				f.out.Add(r, now)
			}
		case err := <-sent:
			busy = false
			f.out.Done()
			if err != nil {
				return err
			}
		case w := <-f.flushes:
			draining = true
			waiting = append(waiting, w)
		case <-f.acked.notice:
			f.ackedUpTo(f.acked.n.Load(), time.Now())
		case err := <-f.ackFailed:
			return err
		case <-ctxDone:
			return f.ctx.Err() // records not sent were never acked: the source reads them again after a restart
		case <-wake:
		}
	}
}
