package source

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/connkit/connkit/sdk"
)

// queue hands records from the source's reader goroutine to ReadBatch, one
// put at a time: put waits until ReadBatch has taken everything put before.
// So the reader decodes the next transaction (or reads the next snapshot
// chunk) while ReadBatch hands out the last, and no further: a consumer
// that stalls stalls the reader too, and PostgreSQL keeps the changes in
// its WAL for the replication slot instead of the source growing memory.
// Records read further ahead would only wait here, stamped as read (their
// latency in Conduit counts from then), and a reader decoding a burst of
// them competes for a processor with what hands them on.
type queue struct {
	ready chan struct{} // signalled when records or an error arrive
	space chan struct{} // signalled when the last records are taken

	mu   sync.Mutex
	recs []sdk.Record
	err  error // why the reader ended; returned once the records before it are taken
}

func newQueue() *queue {
	return &queue{ready: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// put hands recs over once everything put before is taken, calling
// keepAlive every interval while it waits (the reader keeps its
// replication connection alive there). The queue keeps the slice: the
// caller must not use it again.
func (q *queue) put(ctx context.Context, recs []sdk.Record, interval time.Duration, keepAlive func() error) error {
	var tick <-chan time.Time // made once put waits
	for {
		q.mu.Lock()
		if len(q.recs) == 0 {
			q.recs = recs
			q.mu.Unlock()
			signal(q.ready)
			// ReadBatch likely waits for these: let it have this processor
			// now, not once the replication stream's reader next blocks.
			runtime.Gosched()
			return nil
		}
		q.mu.Unlock()
		if tick == nil && keepAlive != nil {
			t := time.NewTicker(interval)
			defer t.Stop()
			tick = t.C
		}
		select {
		case <-q.space:
		case <-tick:
			if err := keepAlive(); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// fail records why the reader ended.
func (q *queue) fail(err error) {
	q.mu.Lock()
	q.err = err
	q.mu.Unlock()
	signal(q.ready)
}

// take returns between 1 and max records, waiting for the first, or the
// reader's error once every record is taken.
func (q *queue) take(ctx context.Context, max int) ([]sdk.Record, error) {
	for {
		q.mu.Lock()
		if n := min(max, len(q.recs)); n > 0 {
			out := q.recs[:n:n]
			q.recs = q.recs[n:]
			emptied := len(q.recs) == 0
			if emptied {
				q.recs = nil // let the backing array go with the records taken
			}
			q.mu.Unlock()
			if emptied {
				signal(q.space) // only now may a waiting put go on
			}
			return out, nil
		}
		err := q.err
		q.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
