package source

import (
	"context"
	"sync"
	"time"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// lag measures, every interval until ctx ends, how far the slot is behind
// the server on a connection of its own: the snapshot's and the stream's
// are busy.
func (s *Source) lag(ctx context.Context, interval time.Duration) {
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}()
	warned := false
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		var err error
		if conn == nil || conn.IsClosed() {
			conn, err = pgx.Connect(ctx, s.cfg.URL)
		}
		if err == nil {
			err = s.measureLag(ctx, conn)
		}
		if err != nil && ctx.Err() == nil && !warned {
			sdk.Logger(ctx).Warn("postgres: cannot measure the replication lag: " + pg.Reason(err, s.cfg.URL))
			warned = true
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// measureLag sets the lag metrics: the server's WAL end less the slot's
// confirmed LSN or, if it is earlier, the first LSN of the oldest
// transaction read and not all acknowledged; and the age of the last
// change read while some change read is not acknowledged.
func (s *Source) measureLag(ctx context.Context, conn *pgx.Conn) error {
	var end, confirmed, status string
	var safe *int64
	err := conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text, coalesce(confirmed_flush_lsn::text, '0/0'), coalesce(to_jsonb(s)->>'wal_status', ''), (to_jsonb(s)->>'safe_wal_size')::bigint FROM pg_replication_slots s WHERE slot_name = $1`, s.cfg.Slot.Name).Scan(&end, &confirmed, &status, &safe)
	if err != nil {
		return err
	}
	s.showSlotHealth(status, safe)
	endLSN, err := pglogrepl.ParseLSN(end)
	if err != nil {
		return err
	}
	confirmedLSN, err := pglogrepl.ParseLSN(confirmed)
	if err != nil {
		return err
	}
	s.metrics.confirmedLSN.Set(float64(confirmedLSN))
	from := confirmedLSN
	if first, ok := s.acks.backlog.oldest(); ok {
		from = min(from, first)
	}
	s.metrics.lagBytes.Set(float64(max(endLSN, from) - from))
	var seconds float64
	if committed := s.acks.lastCommit.Load(); committed != 0 && s.acks.unacked() > 0 {
		seconds = max(0, time.Since(time.Unix(0, committed)).Seconds())
	}
	s.metrics.lagSeconds.Set(seconds)
	return nil
}

// walStatuses are the values of pg_replication_slots.wal_status.
var walStatuses = []string{"reserved", "extended", "unreserved", "lost"}

// showSlotHealth sets the slot's wal_status and safe_wal_size (nil: no
// limit, or lost) metrics.
func (s *Source) showSlotHealth(status string, safe *int64) {
	for _, st := range walStatuses {
		v := 0.0
		if st == status {
			v = 1
		}
		s.metrics.slotWALStatus.Set(v, st)
	}
	bytes := -1.0
	if safe != nil {
		bytes = float64(*safe)
	}
	s.metrics.slotSafeWALSize.Set(bytes)
}

// backlog is the transactions whose changes the source has queued and
// Conduit has not all acknowledged, oldest first. The slot's confirmed
// LSN alone can be ahead of them: it follows the server's WAL end while
// nothing read is unacknowledged, even into a transaction the server has
// yet to send. A nil backlog keeps nothing.
type backlog struct {
	mu  sync.Mutex
	txs []backlogTx
}

type backlogTx struct {
	commitLSN, firstLSN pglogrepl.LSN // its commit record's LSN and its first
	unacked             int
}

// queued notes n changes queued of the transaction that starts at first
// and commits at commit.
func (b *backlog) queued(commit, first pglogrepl.LSN, n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if k := len(b.txs); k > 0 && b.txs[k-1].commitLSN == commit {
		b.txs[k-1].unacked += n // the rest of a large transaction
		return
	}
	b.txs = append(b.txs, backlogTx{commitLSN: commit, firstLSN: first, unacked: n})
}

// acked notes the acknowledgment of a change of the transaction that
// commits at commit; acknowledgments come in order.
func (b *backlog) acked(commit pglogrepl.LSN) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.txs) > 0 && b.txs[0].commitLSN < commit {
		b.txs = b.txs[1:]
	}
	if len(b.txs) > 0 && b.txs[0].commitLSN == commit {
		if b.txs[0].unacked--; b.txs[0].unacked <= 0 {
			b.txs = b.txs[1:]
		}
	}
}

// oldest returns the first LSN of the oldest transaction not all
// acknowledged, if there is one.
func (b *backlog) oldest() (pglogrepl.LSN, bool) {
	if b == nil {
		return 0, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.txs) == 0 {
		return 0, false
	}
	return b.txs[0].firstLSN, true
}
