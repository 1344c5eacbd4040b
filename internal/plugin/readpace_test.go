package plugin

import (
	"testing"
	"time"
)

// paceAt is a readPace driven on a clock of its own, in milliseconds.
type paceAt struct {
	p    readPace
	zero time.Time
}

// ackingByMessage returns a paceAt that has seen a busy Conduit ack
// messages of 100 records one by one, each 5 ms after it was sent, until
// 10 ms after the last.
func ackingByMessage() *paceAt {
	c := &paceAt{zero: time.Unix(0, 0)}
	for i := range byMessage {
		c.cycle(100, i*10, 5)
	}
	return c
}

func (c *paceAt) at(ms int) time.Time { return c.zero.Add(time.Duration(ms) * time.Millisecond) }

// cycle sends a message of n records at ms, a Send that waits for the
// transport, and has Conduit ack it whole, alone, rt ms later.
func (c *paceAt) cycle(n, ms, rt int) {
	c.p.sent(n, c.at(ms))
	c.p.sendEnded(2 * sendBlocked)
	c.p.acked(n, c.at(ms+rt))
}

func TestReadPaceHoldsForConduitThatAcksByMessage(t *testing.T) {
	c := &paceAt{zero: time.Unix(0, 0)}
	for i := range byMessage {
		if !c.p.mayGo(c.at(i*10), false) {
			t.Fatalf("held a batch after %d messages acked whole: too soon to tell", i)
		}
		c.cycle(100, i*10, 5)
	}
	c.p.sent(100, c.at(100))
	if c.p.mayGo(c.at(101), false) {
		t.Fatal("a due batch went while Conduit, acking message by message, has not acked the last")
	}
	if !c.p.mayGo(c.at(101), true) {
		t.Fatal("a complete batch waited")
	}
	if got, want := c.p.holdUntil(), c.at(110); !got.Equal(want) {
		t.Fatalf("holds until %v, want twice the turnaround of 5 ms after the send: %v", got, want)
	}
	c.p.acked(100, c.at(104))
	if !c.p.mayGo(c.at(104), false) {
		t.Fatal("the batch waits although its ack came")
	}
}

func TestReadPaceHoldsNothingForConduitThatReadsOn(t *testing.T) {
	tests := []struct {
		name string
		acks func(c *paceAt, ms int) // acks the message of 100 records sent at ms
	}{
		{"by record", func(c *paceAt, ms int) {
			for i := range 100 {
				c.p.acked(1, c.at(ms+1+i/50))
			}
		}},
		{"in bulk", func(c *paceAt, ms int) {
			c.p.sent(100, c.at(ms+1))
			c.p.acked(200, c.at(ms+2))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &paceAt{zero: time.Unix(0, 0)}
			for i := range 10 {
				c.p.sent(100, c.at(i*20))
				tt.acks(c, i*20)
			}
			c.p.sent(100, c.at(300))
			if !c.p.mayGo(c.at(301), false) {
				t.Fatal("a due batch waits for an ack from a Conduit that does not ack message by message")
			}
		})
	}
}

func TestReadPaceStopsHoldingWhenAcksComeLate(t *testing.T) {
	c := ackingByMessage()
	ms := 100
	for i := range maxMissed {
		c.p.sent(100, c.at(ms))
		if c.p.mayGo(c.at(ms+1), false) {
			t.Fatalf("wait %d: did not hold", i+1)
		}
		if until := c.p.holdUntil(); !c.p.mayGo(until, false) {
			t.Fatalf("wait %d: held past twice the turnaround", i+1)
		}
		c.p.acked(100, c.at(ms+50)) // long after: Conduit read on
		ms += 100
	}
	c.p.sent(100, c.at(ms))
	if !c.p.mayGo(c.at(ms+1), false) {
		t.Fatalf("held after %d waits in vain", maxMissed)
	}
}

func TestReadPaceWaitsAtMostMaxHoldBack(t *testing.T) {
	c := &paceAt{zero: time.Unix(0, 0)}
	rt := int(maxHoldBack/time.Millisecond) * 3 / 4
	for i := range byMessage {
		c.cycle(100, i*1000, rt)
	}
	c.p.sent(100, c.at(10000))
	if got, want := c.p.holdUntil(), c.at(10000).Add(maxHoldBack); !got.Equal(want) {
		t.Fatalf("holds until %v, want %v", got, want)
	}
}

// A Conduit that acks message by message, but later than a batch may
// wait (Conduit v0.19's v2 engine), is not waited for: each wait would
// end without the ack, the records read meanwhile kept back for nothing.
func TestReadPaceHoldsNothingWhenAcksComeAfterTheLongestWait(t *testing.T) {
	c := &paceAt{zero: time.Unix(0, 0)}
	rt := int(maxHoldBack / time.Millisecond)
	for i := range byMessage {
		c.cycle(100, i*1000, rt)
	}
	c.p.sent(100, c.at(10000))
	if !c.p.mayGo(c.at(10001), false) {
		t.Fatalf("a due batch waited for an ack that took %d ms the last time", rt)
	}
}

// A busy Conduit that handles one message at a time (Conduit v0.14's v2
// engine), with messages queued in the transport, acks each long after
// its send, but soon after the message before: it is waited for, so that
// the queue drains and its next message is as large as what is read
// while it works.
func TestReadPaceHoldsForConduitBehindItsTransport(t *testing.T) {
	c := ackingByMessage()
	for i := range 5 {
		c.p.sent(100, c.at(100+i))
		c.p.sendEnded(2 * sendBlocked)
	}
	for i := range 5 {
		c.p.acked(100, c.at(130+30*i)) // the last, 146 ms after its send
	}
	c.p.sent(100, c.at(260))
	if c.p.mayGo(c.at(261), false) {
		t.Fatal("a due batch went while Conduit, taking 30 ms a message, has not acked the last")
	}
	if got, want := c.p.holdUntil(), c.at(320); !got.Equal(want) {
		t.Fatalf("holds until %v, want twice the turnaround of 30 ms after the send: %v", got, want)
	}
	// Still queued: the oldest message unacked was sent long before
	// Conduit could start on it, at the last ack.
	c.p.sent(100, c.at(261))
	c.p.acked(100, c.at(290))
	if c.p.mayGo(c.at(330), false) {
		t.Fatal("a due batch went while Conduit works on a message that waited in the transport")
	}
	if got, want := c.p.holdUntil(), c.at(350); !got.Equal(want) {
		t.Fatalf("holds until %v, want twice the turnaround of 30 ms after the last ack: %v", got, want)
	}
}

func TestReadPacePartialAckEndsByMessage(t *testing.T) {
	c := ackingByMessage()
	c.p.sent(100, c.at(100))
	c.p.acked(40, c.at(101))
	c.p.sent(100, c.at(102))
	if !c.p.mayGo(c.at(103), false) {
		t.Fatal("held after Conduit acked part of a message")
	}
}

func TestReadPaceMessagesOfOneRecordSayNothing(t *testing.T) {
	c := &paceAt{zero: time.Unix(0, 0)}
	for i := range 10 {
		c.cycle(1, i*10, 5)
	}
	c.p.sent(1, c.at(100))
	if !c.p.mayGo(c.at(101), false) {
		t.Fatal("held after messages of one record, which a Conduit acking by record acks alone too")
	}
}

func TestReadPaceWaitsOnlyForBusyConduit(t *testing.T) {
	c := ackingByMessage()
	// Conduit caught up: a due batch finds everything acked.
	if !c.p.mayGo(c.at(50), false) {
		t.Fatal("held with nothing unacked")
	}
	c.p.sent(100, c.at(50))
	c.p.sendEnded(0)
	if !c.p.mayGo(c.at(51), false) {
		t.Fatal("held for a Conduit that caught up and whose transport took the last message at once")
	}
	c.p.sent(100, c.at(51))
	c.p.sendEnded(2 * sendBlocked)
	if c.p.mayGo(c.at(53), false) {
		t.Fatal("did not hold once the transport made a Send wait")
	}
	c.p.acked(100, c.at(55))
	c.p.acked(100, c.at(56))
	if !c.p.mayGo(c.at(56), false) {
		t.Fatal("held after the ack")
	}
	c.p.sent(100, c.at(56))
	c.p.sendEnded(0) // the transport was empty: the batch waited for Conduit
	if c.p.mayGo(c.at(57), false) {
		t.Fatal("stopped awaiting acks after a wait that the ack ended: Conduit is still busy")
	}
}
