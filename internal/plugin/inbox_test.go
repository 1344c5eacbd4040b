package plugin

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/matryer/is"
)

// TestInboxTakesEverythingAtOnce: records put one by one are taken in one
// take, in order, behind one signal, and the reader's end comes with the
// last of them, never before.
func TestInboxTakesEverythingAtOnce(t *testing.T) {
	is := is.New(t)
	b := newInbox(inboxCount, true)
	quit := make(chan struct{})
	for i := 1; i <= 3; i++ {
		is.True(b.put(numbered(i, i), quit))
	}
	b.end(io.EOF)
	<-b.ready
	got := b.take(nil)
	is.Equal(positionList(got.records), "[1 2 3]")
	is.Equal(len(got.came), 3) // one run for each put
	is.Equal([]int{got.came[0].n, got.came[1].n, got.came[2].n}, []int{1, 1, 1})
	is.True(got.ended)
	is.Equal(got.err, io.EOF)
	is.Equal(len(b.ready), 0) // one signal for all of it
}

// TestInboxEndAfterTake: a reader that ends after its records were taken
// is seen ending with nothing more to take.
func TestInboxEndAfterTake(t *testing.T) {
	is := is.New(t)
	b := newInbox(inboxCount, false)
	is.True(b.put(numbered(1, 2), make(chan struct{})))
	got := b.take(nil)
	is.Equal(positionList(got.records), "[1 2]")
	is.True(!got.ended)
	is.Equal(len(got.came), 0) // not timed
	failed := errors.New("stream broken")
	b.end(failed)
	<-b.ready
	got = b.take(got.records)
	is.Equal(len(got.records), 0)
	is.True(got.ended)
	is.Equal(got.err, failed)
}

// TestInboxFullWaitsForATake: put returns only once the owner has taken a
// full inbox, or once the owner has quit.
func TestInboxFullWaitsForATake(t *testing.T) {
	for _, bytes := range []bool{false, true} {
		name := "count"
		full := numbered(1, inboxCount)
		if bytes {
			name = "bytes"
			full = []opencdc.Record{{Position: opencdc.Position("1"), Payload: opencdc.Change{After: opencdc.RawData(strings.Repeat("x", inboxBytes))}}}
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				is := is.New(t)
				b := newInbox(inboxCount, false)
				quit := make(chan struct{})
				put := make(chan bool, 1)
				go func() { put <- b.put(full, quit) }()
				synctest.Wait()
				is.Equal(len(put), 0) // full: waiting for the owner
				is.Equal(len(b.take(nil).records), len(full))
				is.True(<-put)

				go func() { put <- b.put(full, quit) }()
				synctest.Wait()
				is.Equal(len(put), 0)
				close(quit) // the owner has returned
				is.True(!<-put)
			})
		})
	}
}

// TestInboxLimit: the reader waits once the inbox holds its limit, and a
// raised limit lets it go on without a take.
func TestInboxLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		b := newInbox(2, false)
		quit := make(chan struct{})
		is.True(b.put(numbered(1, 1), quit)) // below the limit: returns at once
		returned := make(chan bool)
		go func() { returned <- b.put(numbered(2, 2), quit) }()
		synctest.Wait()
		select {
		case <-returned:
			t.Fatal("put returned with the inbox at its limit")
		default:
		}
		b.setLimit(3)
		is.True(<-returned)
		b.setLimit(0) // at least 1
		b.mu.Lock()
		is.Equal(b.limit, 1)
		b.mu.Unlock()
	})
}
