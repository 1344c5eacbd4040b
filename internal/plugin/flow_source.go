package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/batcher"
)

// sourceFlow is one source Run's owner loop: it takes everything waiting
// in the reader's inbox at once while the hold bound has room, and hands
// the sender a batch whenever the sender is free and a batch is due. It
// reads the clock once per wake-up.
type sourceFlow struct {
	stream    pconnector.SourceRunStreamServer
	out       *batcher.Batcher[opencdc.Record]
	ctx       context.Context
	inbox     *inbox // what the reader read, and why it returned
	ackFailed <-chan error
	flushes   <-chan chan struct{}
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
		if !busy && (f.out.Due(now) || (draining && f.out.Len() > 0)) {
			busy = true
			batches <- f.out.Take()
			continue
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
		if !busy && !draining {
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
		case err := <-f.ackFailed:
			return err
		case <-ctxDone:
			return f.ctx.Err() // records not sent were never acked: the source reads them again after a restart
		case <-wake:
		}
		now = time.Now() // once per wake-up
	}
}
