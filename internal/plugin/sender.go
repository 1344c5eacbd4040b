package plugin

import (
	"fmt"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
)

// sender is a source's flow: it sends each batch to Conduit, one at a
// time. The transport takes a message at once while Conduit keeps up, and
// makes the sender wait while Conduit does not, so that a busy Conduit
// gets what was read meanwhile in one message.
type sender struct {
	stream  pconnector.SourceRunStreamServer
	work    *workers[[]opencdc.Record]
	sent    chan error // a Send ended, with its error
	sending int        // the records of the Send in flight; 0: none
	began   time.Time  // when it began
	through int        // records sent, from the Run's start on
}

func newSender(stream pconnector.SourceRunStreamServer) *sender {
	s := &sender{stream: stream, sent: make(chan error, 1)}
	s.work = newWorkers(1, func(batch []opencdc.Record) {
		err := s.stream.Send(pconnector.SourceRunResponse{Records: batch})
		if err != nil {
			err = fmt.Errorf("send records to Conduit: %w", err)
		}
		s.sent <- err
	})
	return s
}

func (s *sender) free() bool                     { return s.sending == 0 }
func (s *sender) room(next []opencdc.Record) int { return len(next) }
func (s *sender) slots() int                     { return 1 }

func (s *sender) start(batch []opencdc.Record, _ bool, now time.Time) {
	s.sending, s.began = len(batch), now
	s.work.start(batch)
}

func (s *sender) events() <-chan error { return s.sent }

func (s *sender) handle(err error, now time.Time) progress {
	s.work.finished()
	s.through += s.sending
	p := progress{done: 1, through: s.through, paced: s.sending, took: now.Sub(s.began), err: err}
	s.sending = 0
	return p
}

func (s *sender) idle() bool                       { return s.sending == 0 }
func (s *sender) after(time.Time) (wake time.Time) { return time.Time{} }

func (s *sender) close() { s.work.close() }
