package source

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/connkit/connkit/sdk"
)

func records(positions ...string) []sdk.Record {
	recs := make([]sdk.Record, len(positions))
	for i, p := range positions {
		recs[i].Position = sdk.Position(p)
	}
	return recs
}

// A put waits until everything put before is taken, keeping the connection
// alive meanwhile; records come out in order, as many as asked for.
func TestQueuePutWaitsUntilTheLastIsTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue()
		ctx := t.Context()
		if err := q.put(ctx, records("a", "b", "c"), time.Second, nil); err != nil {
			t.Fatal(err)
		}
		kept := 0
		put := make(chan error, 1)
		go func() {
			put <- q.put(ctx, records("d"), time.Second, func() error { kept++; return nil })
		}()
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		select {
		case err := <-put:
			t.Fatalf("the second put returned (%v) before the first was taken", err)
		default:
		}
		if kept != 2 {
			t.Fatalf("kept the connection alive %d times in 2.5 s of waiting, expected 2", kept)
		}

		got, err := q.take(ctx, 2)
		if err != nil || len(got) != 2 || got[0].Position.String() != "a" || got[1].Position.String() != "b" {
			t.Fatalf("take(2) = %v, %v; expected a and b", got, err)
		}
		synctest.Wait()
		select {
		case err := <-put:
			t.Fatalf("the second put returned (%v) while c waits to be taken", err)
		default:
		}

		if got, err := q.take(ctx, 10); err != nil || len(got) != 1 || got[0].Position.String() != "c" {
			t.Fatalf("take(10) = %v, %v; expected c", got, err)
		}
		if err := <-put; err != nil {
			t.Fatal(err)
		}
		if got, err := q.take(ctx, 10); err != nil || len(got) != 1 || got[0].Position.String() != "d" {
			t.Fatalf("take(10) = %v, %v; expected d", got, err)
		}
	})
}

// A waiting put returns when its context ends, and the reader's error
// comes after the records put before it.
func TestQueueEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQueue()
		if err := q.put(t.Context(), records("a"), time.Second, nil); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		put := make(chan error, 1)
		go func() { put <- q.put(ctx, records("b"), time.Second, nil) }()
		synctest.Wait()
		cancel()
		if err := <-put; !errors.Is(err, context.Canceled) {
			t.Fatalf("put = %v, expected context.Canceled", err)
		}

		boom := errors.New("boom")
		q.fail(boom)
		if got, err := q.take(t.Context(), 10); err != nil || len(got) != 1 {
			t.Fatalf("take = %v, %v; expected a", got, err)
		}
		if _, err := q.take(t.Context(), 10); !errors.Is(err, boom) {
			t.Fatalf("take after the records = %v, expected the reader's error", err)
		}
	})
}
