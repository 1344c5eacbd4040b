package plugin

import (
	"bytes"
	"context"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
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

// holdFor returns the bound on what a server holds under policy p: two
// batches' worth, one being written while the next is collected.
func holdFor(p batcher.Policy) batcher.Hold {
	h := batcher.Hold{Count: defaultHoldCount, Bytes: defaultHoldBytes}
	if p.Count > 0 {
		h.Count = 2 * p.Count
	}
	if p.Bytes > 0 {
		h.Bytes = 2 * p.Bytes
	}
	return h
}

// destinationFlow is one destination Run: the owner loop, run by run, and
// the reader and writer goroutines it starts. The owner alone touches the
// batcher and decides: it takes a message from the reader only while the
// hold bound has room, hands the writer a batch whenever the writer is free
// and a batch is due, and waits for the batch's delay when nothing else
// happens.
type destinationFlow struct {
	server   *destinationServer
	dst      *Destination
	stream   pconnector.DestinationRunStreamServer
	in       *batcher.Batcher[opencdc.Record]
	ctx      context.Context // the stream's
	writeCtx context.Context // the writes'; Teardown cancels it
	stops    <-chan stopRequest
}

// pendingStop is a Stop waiting for the record at its position to be
// acked: upTo is how many records were received up to and including it,
// 0 until it is received.
type pendingStop struct {
	stopRequest
	upTo int
}

func (f *destinationFlow) run() error {
	quit := make(chan struct{})
	defer close(quit)

	// The reader receives messages and hands each to the owner, which only
	// takes it while there is room: until then Recv is not called again.
	messages := make(chan []opencdc.Record)
	received := make(chan error, 1)
	go func() {
		for {
			req, err := f.stream.Recv()
			if err != nil {
				received <- err
				return
			}
			if len(req.Records) == 0 {
				continue
			}
			select {
			case messages <- req.Records:
			case <-quit:
				return
			}
		}
	}()

	// The writer writes one batch at a time and sends its acks.
	batches := make(chan []opencdc.Record)
	written := make(chan error, 1)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for batch := range batches {
			written <- f.server.write(f.writeCtx, f.dst, f.stream, batch)
		}
	}()
	defer func() { close(batches); <-writerDone }()

	var (
		timer     = time.NewTimer(time.Hour)
		busy      bool  // a batch is being written
		busyCount int   // its records
		halt      bool  // write nothing more: Conduit is gone, or Teardown
		draining  bool  // write without waiting: Stop was called, or Conduit closed its side
		recvDone  bool  // the reader has ended, with recvErr
		recvErr   error //
		writeErr  error // the first failed write (its acks could not be sent)
		nReceived int   // records received
		nAcked    int   // records acked or nacked
		lastRecv  opencdc.Position
		stops     []pendingStop
		ctxDone   = f.ctx.Done()
		tornDown  = f.writeCtx.Done()
		stopping  = f.server.halt.stopping() // Stop was called, maybe before Run
	)
	timer.Stop()
	defer timer.Stop()
	settled := func() {
		kept := stops[:0]
		for _, s := range stops {
			if len(s.last) == 0 || (s.upTo > 0 && nAcked >= s.upTo) {
				close(s.done)
				continue
			}
			kept = append(kept, s)
		}
		stops = kept
	}
	for {
		now := time.Now()
		if !busy && !halt && (f.in.Due(now) || (draining && f.in.Len() > 0)) {
			batch := f.in.Take()
			busy, busyCount = true, len(batch)
			batches <- batch
			continue
		}
		if !busy && (halt || (recvDone && f.in.Len() == 0)) {
			if writeErr != nil {
				return writeErr
			}
			if halt {
				return nil
			}
			return recvErr
		}
		var take chan []opencdc.Record
		if !recvDone && !halt && f.in.Room() {
			take = messages
		}
		var wake <-chan time.Time
		if !busy && !halt && !draining {
			if d, ok := f.in.Wait(now); ok {
				timer.Reset(d)
				wake = timer.C
			}
		}
		select {
		case recs := <-take:
			now := time.Now() // the select may have waited
			for _, r := range recs {
				f.in.Add(r, now)
			}
			for i := range stops {
				if stops[i].upTo > 0 {
					continue
				}
				for k, r := range recs {
					if bytes.Equal(r.Position, stops[i].last) {
						stops[i].upTo = nReceived + k + 1
					}
				}
			}
			nReceived += len(recs)
			lastRecv = recs[len(recs)-1].Position
		case err := <-written:
			busy = false
			f.in.Done()
			nAcked += busyCount
			if err != nil {
				writeErr, halt = err, true
			}
			settled()
		case r := <-f.stops:
			draining = true
			s := pendingStop{stopRequest: r}
			if len(r.last) > 0 && bytes.Equal(r.last, lastRecv) {
				s.upTo = nReceived
			}
			stops = append(stops, s)
			settled()
		case <-stopping:
			stopping = nil
			draining = true
		case err := <-received:
			recvDone, recvErr = true, err
			// What was received is written and acked while the stream
			// lasts; once Conduit is gone, acks cannot reach it.
			draining = true
			halt = halt || f.ctx.Err() != nil
		case <-ctxDone:
			ctxDone = nil
			halt = true // acks can no longer reach Conduit: it delivers those records again
		case <-tornDown:
			tornDown = nil
			halt = true
		case <-wake:
		}
	}
}
