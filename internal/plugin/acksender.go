package plugin

import (
	"fmt"
	"time"
)

// ackSender is the one owner of a destination's ledger: the writers open
// each Write they hand out in it and tell it what each settles, and it
// sends the acks to Conduit in record order, one Send at a time, and
// reports each Send's end as a writeEvent. While Writes are in flight, a
// goroutine of its own sends, so that the owner goes on taking their
// reports; with none in flight, nothing reports meanwhile and the owner
// sends itself: a Send hands the message to gRPC's writer and returns,
// unless Conduit's flow-control window is full.
type ackSender struct {
	ledger     ledger
	send       func([]ack) error
	reports    chan<- writeEvent
	sends      chan []ack    // to the goroutine that sends acks
	sent       chan struct{} // closed once that goroutine has returned
	sendErr    error         // a Send failed: no more go
	readySince time.Time     // when the oldest ack ready and not yet in a Send became ready
}

// newAckSender starts the goroutine that sends acks with send, and
// reports each Send's end on reports.
func newAckSender(send func([]ack) error, reports chan<- writeEvent) *ackSender {
	a := &ackSender{send: send, reports: reports, sends: make(chan []ack, 1), sent: make(chan struct{})}
	go func() {
		defer close(a.sent)
		for acks := range a.sends {
			reports <- writeEvent{sent: true, err: send(acks)}
		}
	}()
	return a
}

// settle takes acks that Write seq settled at now, ended saying whether
// they are its last, and returns how many Writes are done with (see
// ledger.settle).
func (a *ackSender) settle(seq uint64, acks []ack, ended bool, now time.Time) (done int, err error) {
	done, err = a.ledger.settle(seq, acks, ended)
	if err == nil && a.readySince.IsZero() && a.ledger.hasReady() {
		a.readySince = now
	}
	return done, err
}

// sentAcks takes the end of the Send in flight: its records are through,
// and the acks ready meanwhile go next.
func (a *ackSender) sentAcks(err error) progress {
	if err != nil {
		a.sendErr = fmt.Errorf("send acks to Conduit: %w", err)
		return progress{err: a.sendErr}
	}
	return progress{through: a.ledger.sentAll()}
}

// ackLinger is the longest acks ready wait for the acks of a Write in
// flight to go with them in one message, and only while Writes take less
// than half of it: a busy destination that writes small batches fast
// (sdk.batch.size 1 under load) sends its acks a few Writes at a time, not
// in a message per Write, each of which costs the plugin and Conduit a
// gRPC message; one whose Writes take longer, or that has no Write in
// flight, sends them at once.
const ackLinger = time.Millisecond

// after starts a Send of the acks ready, unless one is in flight, or they
// may linger for the acks of a Write in flight (see ackLinger): then it
// returns when they go at the latest.
func (a *ackSender) after(now time.Time, linger bool) (wake time.Time) {
	if a.sendErr != nil || a.ledger.sendingNow() || !a.ledger.hasReady() {
		return time.Time{}
	}
	if until := a.readySince.Add(ackLinger); linger && now.Before(until) {
		return until
	}
	acks, _ := a.ledger.next()
	a.readySince = time.Time{}
	if a.ledger.inFlight == 0 {
		// Nothing else reports: reports has room.
		a.reports <- writeEvent{sent: true, err: a.send(acks)}
		return time.Time{}
	}
	a.sends <- acks // never waits: at most one Send is in flight
	return time.Time{}
}

// idle reports whether no Write is in flight and every ack ready is sent,
// or can no longer be.
func (a *ackSender) idle() bool {
	if a.sendErr != nil {
		return a.ledger.inFlight == 0
	}
	return a.ledger.idle() && !a.ledger.sendingNow()
}

// close ends the goroutine, once the Send in flight has ended.
func (a *ackSender) close() {
	close(a.sends)
	<-a.sent
}
