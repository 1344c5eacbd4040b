package plugin

import (
	"fmt"
	"sync"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
)

// sender is a source's flow: it sends each batch to Conduit, one at a
// time. The transport takes a message at once while Conduit keeps up, and
// makes the sender wait while Conduit does not, so that a busy Conduit
// gets what was read meanwhile in one message. Where Conduit reads a
// message only once it has acked the last, a due batch also waits for
// that ack (see readPace).
type sender struct {
	stream  pconnector.SourceRunStreamServer
	work    *workers[[]opencdc.Record]
	reports chan senderEvent
	sending int       // the records of the Send in flight; 0: none
	began   time.Time // when it began
	through int       // records sent, from the Run's start on
	pace    readPace  // its awaiting says a due batch awaits an ack: the acker then wakes the loop

	mu    sync.Mutex // guards acks, which the acker appends to
	acks  []ackRequest
	spare []ackRequest
}

// A senderEvent is a Send's end, with its error, or, if not sent, a
// notice that ack requests came.
type senderEvent struct {
	sent bool
	err  error
}

// An ackRequest is one ack request of Conduit's: how many positions, and
// when it came.
type ackRequest struct {
	n  int
	at time.Time
}

func newSender(stream pconnector.SourceRunStreamServer) *sender {
	// Room for a Send's end and a notice: the worker's report never waits
	// long, and a notice is dropped only while another waits.
	s := &sender{stream: stream, reports: make(chan senderEvent, 2)}
	s.work = newWorkers(1, func(batch []opencdc.Record) {
		err := s.stream.Send(pconnector.SourceRunResponse{Records: batch})
		if err != nil {
			err = fmt.Errorf("send records to Conduit: %w", err)
		}
		s.reports <- senderEvent{sent: true, err: err}
	})
	return s
}

// acked notes an ack request of n positions, received now. The acker
// calls it, on its own goroutine; it wakes the loop only while a batch
// waits for an ack, and otherwise the loop reads the requests when it
// next hands out or hears from a Send.
func (s *sender) acked(n int) {
	s.mu.Lock()
	s.acks = append(s.acks, ackRequest{n, time.Now()})
	s.mu.Unlock()
	if s.pace.awaiting.Load() {
		s.notice()
	}
}

// paceAcks has the pace note the ack requests that came since it last did.
func (s *sender) paceAcks() {
	s.mu.Lock()
	reqs := s.acks
	s.acks, s.spare = s.spare[:0], reqs
	s.mu.Unlock()
	for _, r := range reqs {
		s.pace.acked(r.n, r.at)
	}
}

// take sends the batch due, if no Send is in flight and the pace lets it
// go (see readPace).
func (s *sender) take(d dueBatch, now time.Time) bool {
	if s.sending > 0 {
		return false
	}
	s.paceAcks()
	if !s.pace.mayGo(now, d.urgent) {
		s.mu.Lock()
		came := len(s.acks) > 0 // before the acker saw it awaiting
		s.mu.Unlock()
		if came {
			s.notice()
		}
		return false
	}
	batch := d.take(len(d.records))
	s.sending, s.began = len(batch), now
	s.pace.sent(len(batch), now)
	s.work.start(batch)
	return true
}

// notice wakes the loop to read the ack requests, unless a report waits.
func (s *sender) notice() {
	select {
	case s.reports <- senderEvent{}:
	default: // a report waits: the loop reads every request noted so far
	}
}

func (s *sender) slots() int { return 1 }

func (s *sender) events() <-chan senderEvent { return s.reports }

func (s *sender) handle(e senderEvent, now time.Time) progress {
	s.paceAcks()
	if !e.sent {
		return progress{}
	}
	s.work.finished()
	s.through += s.sending
	p := progress{done: 1, through: s.through, handled: s.sending, took: now.Sub(s.began), err: e.err}
	s.pace.sendEnded(p.took)
	s.sending = 0
	return p
}

func (s *sender) idle() bool { return s.sending == 0 }

// after returns when a batch held back for an ack goes without it.
func (s *sender) after(now time.Time) (wake time.Time) {
	if until := s.pace.holdUntil(); until.After(now) {
		return until
	}
	return time.Time{}
}

func (s *sender) close() { s.work.close() }
