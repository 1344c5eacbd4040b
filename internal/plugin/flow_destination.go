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
// batches' worth, one being written while the next is collected. A
// server passes it by what its reader's inbox may hold when the owner takes
// it, and again by what the reader receives or reads after that: each less
// than 128 records and 128 KiB (inboxCount, inboxBytes) plus one message
// or Read.
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
// batcher and decides: it takes everything waiting in the reader's inbox
// at once, only while the hold bound has room, hands the writer a batch
// whenever the writer is free and a batch is due, and waits for the
// batch's delay when nothing else happens. It reads the clock once per
// wake-up.
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

	// The reader receives messages into the inbox, which the owner empties
	// only while there is room: once the inbox is full, Recv is not called
	// again until it has.
	inbox := newInbox()
	go func() {
		for {
			req, err := f.stream.Recv()
			if err != nil {
				inbox.end(err)
				return
			}
			if len(req.Records) > 0 && !inbox.put(req.Records, quit) {
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
		spare     []opencdc.Record // the records last taken from the inbox, done with at the next take
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
	now := time.Now()
	for {
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
		var take chan struct{}
		if !recvDone && !halt && f.in.Room() {
			take = inbox.ready
		}
		var wake <-chan time.Time
		if !busy && !halt && !draining {
			if d, ok := f.in.Wait(now); ok {
				timer.Reset(d)
				wake = timer.C
			}
		}
		select {
		case <-take:
			now = time.Now() // the select may have waited
			recs, sizes, ended, err := inbox.take(spare)
			spare = recs
			for i, r := range recs {
				f.in.AddSized(r, sizes[i], now)
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
			if len(recs) > 0 {
				lastRecv = recs[len(recs)-1].Position
			}
			if ended {
				recvDone, recvErr = true, err
				// What was received is written and acked while the stream
				// lasts; once Conduit is gone, acks cannot reach it.
				draining = true
				halt = halt || f.ctx.Err() != nil
			}
			continue // now is read
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
		case <-ctxDone:
			ctxDone = nil
			halt = true // acks can no longer reach Conduit: it delivers those records again
		case <-tornDown:
			tornDown = nil
			halt = true
		case <-wake:
		}
		now = time.Now() // once per wake-up
	}
}
