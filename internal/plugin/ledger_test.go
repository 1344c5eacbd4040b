package plugin

import (
	"slices"
	"strconv"
	"testing"

	"github.com/matryer/is"
)

// ledgerModel is what a ledger must do, written the plain way: every
// record's ack, settled or not, and every ack sent so far.
type ledgerModel struct {
	acks    []*ack   // by record; nil until settled
	writes  []mWrite // by seq
	sent    []ack    // in the order Sends carried them
	sending int      // records in the Send in flight; 0: none
	done    int      // Writes done with, oldest first
}

type mWrite struct {
	from, size, settled int
	ended               bool
}

// settledPrefix returns how many leading records are settled.
func (m *ledgerModel) settledPrefix() int {
	n := 0
	for n < len(m.acks) && m.acks[n] != nil {
		n++
	}
	return n
}

// writesDone returns how many leading Writes have settled every record.
func (m *ledgerModel) writesDone() int {
	n := 0
	for n < len(m.writes) && m.writes[n].settled == m.writes[n].size {
		n++
	}
	return n
}

// FuzzLedger drives a ledger and its model with the same steps, Writes
// opened, settling in steps (a retried Write settles its leading records
// before it waits), ending early, late, short (their last records nacked)
// or at once, and Sends started and ended, and checks after every step
// that the ledger sends what the model says: the settled prefix in record
// order, each ack once, one Send in flight, and Writes done with in order,
// each once.
func FuzzLedger(f *testing.F) {
	f.Add([]byte{0, 3, 0, 2, 1, 1, 5, 2, 2, 1, 0, 9, 2, 2})
	f.Add([]byte{0, 1, 0, 1, 0, 1, 1, 2, 1, 1, 1, 1, 1, 0, 1, 2, 2, 2, 2})
	f.Add([]byte{0, 4, 1, 0, 1, 2, 0, 1, 2, 1, 1, 3, 2, 2, 1, 0, 7, 2, 2})
	f.Fuzz(func(t *testing.T, steps []byte) {
		var l ledger
		var m ledgerModel
		for i := 0; i+1 < len(steps); i += 2 {
			op, arg := steps[i]%3, int(steps[i+1])
			switch op {
			case 0: // open a Write
				size := arg%4 + 1
				seq := l.open(write{size: size})
				if int(seq) != len(m.writes) {
					t.Fatalf("open: seq %d, want %d", seq, len(m.writes))
				}
				m.writes = append(m.writes, mWrite{from: len(m.acks), size: size})
				m.acks = append(m.acks, make([]*ack, size)...)
			case 1: // a Write in flight settles some records, maybe its last
				settleSome(t, &l, &m, arg)
			case 2: // a Send starts, or the one in flight ends
				sendStep(t, &l, &m)
			}
			checkLedger(t, &l, &m)
		}
		// Every Write ends, and every ack goes.
		for seq := range m.writes {
			if w := m.writes[seq]; !w.ended {
				settleWrite(t, &l, &m, seq, w.size-w.settled, true, false)
			}
		}
		for range 2*len(m.writes) + 2 {
			sendStep(t, &l, &m)
		}
		checkLedger(t, &l, &m)
		want := make([]ack, len(m.acks))
		for i, a := range m.acks {
			want[i] = *a
		}
		if !slices.EqualFunc(m.sent, want, sameAck) || !l.idle() || m.done != len(m.writes) || len(l.writes) != 0 {
			t.Fatalf("at the end: sent %v, want %v; idle %v; %d of %d Writes done with, %d kept", m.sent, want, l.idle(), m.done, len(m.writes), len(l.writes))
		}
	})
}

// settleSome has a Write in flight, chosen by arg, settle records.
func settleSome(t *testing.T, l *ledger, m *ledgerModel, arg int) {
	var open []int
	for seq, w := range m.writes {
		if !w.ended {
			open = append(open, seq)
		}
	}
	if len(open) == 0 {
		return
	}
	seq := open[arg%len(open)]
	arg /= len(open)
	w := m.writes[seq]
	k := arg % (w.size - w.settled + 1)
	settleWrite(t, l, m, seq, k, k == w.size-w.settled && arg&8 == 0, arg&16 != 0)
}

// settleWrite has Write seq settle its next k records, nacked or not,
// and end or not.
func settleWrite(t *testing.T, l *ledger, m *ledgerModel, seq, k int, ended, nacked bool) {
	w := &m.writes[seq]
	acks := make([]ack, k)
	for i := range acks {
		r := w.from + w.settled + i
		acks[i] = ack{Position: []byte(strconv.Itoa(r))}
		if nacked {
			acks[i].Error = "failed"
		}
		m.acks[r] = &acks[i]
	}
	done, err := l.settle(uint64(seq), acks, ended)
	if err != nil {
		t.Fatalf("settle %d: %v", seq, err)
	}
	w.settled += k
	w.ended = w.ended || ended
	if m.done += done; m.done != m.writesDone() {
		t.Fatalf("settle: %d Writes done with in all, want %d", m.done, m.writesDone())
	}
}

// sendStep starts a Send, or ends the one in flight, on both.
func sendStep(t *testing.T, l *ledger, m *ledgerModel) {
	if m.sending > 0 {
		if _, ok := l.next(); ok {
			t.Fatal("a second Send started while one was in flight")
		}
		m.sent = append(m.sent, derefAll(m.acks[len(m.sent):len(m.sent)+m.sending])...)
		m.sending = 0
		if through := l.sentAll(); through != len(m.sent) {
			t.Fatalf("sentAll: %d records through, want %d", through, len(m.sent))
		}
		return
	}
	acks, ok := l.next()
	want := m.acks[len(m.sent):m.settledPrefix()]
	if ok != (len(want) > 0) || !slices.EqualFunc(acks, derefAll(want), sameAck) {
		t.Fatalf("next: %v, %v; want %v", acks, ok, derefAll(want))
	}
	m.sending = len(want)
}

// checkLedger compares what the ledger reports with the model.
func checkLedger(t *testing.T, l *ledger, m *ledgerModel) {
	inFlight := 0
	for _, w := range m.writes {
		if !w.ended {
			inFlight++
		}
	}
	switch {
	case l.sent != len(m.sent):
		t.Fatalf("%d acks sent, want %d", l.sent, len(m.sent))
	case l.inFlight != inFlight:
		t.Fatalf("%d Writes in flight, want %d", l.inFlight, inFlight)
	case l.sendingNow() != (m.sending > 0):
		t.Fatalf("sending %v, want %v", l.sendingNow(), m.sending > 0)
	}
}

func sameAck(a, b ack) bool { return string(a.Position) == string(b.Position) && a.Error == b.Error }

func derefAll(acks []*ack) []ack {
	out := make([]ack, len(acks))
	for i, a := range acks {
		out[i] = *a
	}
	return out
}

// TestLedgerRefusesWhatNoWriteCanDo: a Write that is not in flight,
// settles more records than it has, ends short of them or settles after
// its end is refused with an error, and nothing of it counts.
func TestLedgerRefusesWhatNoWriteCanDo(t *testing.T) {
	is := is.New(t)
	var l ledger
	seq := l.open(write{size: 2})
	refused := func(seq uint64, acks int, ended bool) bool {
		_, err := l.settle(seq, make([]ack, acks), ended)
		return err != nil
	}
	is.True(refused(seq+1, 0, false)) // no such Write
	is.True(refused(seq, 3, false))   // more records than it has
	is.True(refused(seq, 1, true))    // ended short of its records
	is.True(!refused(seq, 2, true))
	is.True(refused(seq, 0, true)) // settled after it ended
	acks, ok := l.next()
	is.True(ok)
	is.Equal(len(acks), 2)
	is.Equal(l.sentAll(), 2)
	is.True(l.idle())
}
