package pgtest

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Inserter inserts rows across crashes of the server (see
// [InsertAcrossCrashes]) until stopped.
type Inserter struct {
	stopped, done chan struct{}
}

// InsertAcrossCrashes runs insert, a statement that inserts the ten rows
// with ids $1 to $1 + 9, at url every 10 ms (about 1,000 rows a second),
// across crashes of the server, until [Inserter.Stop] or the end of the
// test: after a connection breaks it connects again. A transaction whose
// outcome a crash hides may or may not be committed: its ids are not used
// again, and the table says which rows there are.
func InsertAcrossCrashes(t TB, url, insert string) *Inserter {
	in := &Inserter{stopped: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(in.done)
		var conn *pgx.Conn
		defer func() {
			if conn != nil {
				conn.Close(context.Background())
			}
		}()
		tick := time.NewTicker(10 * time.Millisecond) // a steady rate, not a synchronisation
		defer tick.Stop()
		for next := 1; ; next += 10 {
			select {
			case <-in.stopped:
				return
			case <-tick.C:
			}
			if conn == nil || conn.IsClosed() {
				var err error
				if conn, err = pgx.Connect(context.Background(), url); err != nil {
					continue
				}
			}
			if _, err := conn.Exec(context.Background(), insert, next); err != nil {
				conn.Close(context.Background())
				conn = nil
			}
		}
	}()
	t.Cleanup(in.Stop)
	return in
}

// Stop stops inserting and returns once the last insert has ended; it may
// be called more than once.
func (in *Inserter) Stop() {
	select {
	case <-in.stopped:
	default:
		close(in.stopped)
	}
	<-in.done
}
