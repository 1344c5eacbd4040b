package source

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/metrics"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// sourceMetrics are what the source tells of its progress, beside what
// the SDK measures of every source (sdk.metrics.*): how far its snapshot
// has got, and how far replication is behind the server.
type sourceMetrics struct {
	snapshotRows      *metrics.Counter // by table
	snapshotEstimate  *metrics.Gauge   // by table
	snapshotProgress  *metrics.Gauge
	snapshotRemaining *metrics.Gauge
	lagBytes          *metrics.Gauge
	lagSeconds        *metrics.Gauge
	confirmedLSN      *metrics.Gauge
}

func newSourceMetrics(ctx context.Context) sourceMetrics {
	return sourceMetrics{
		snapshotRows:      metrics.NewCounter(ctx, "postgres_snapshot_rows_total", "Rows the snapshot has read, by table (schema.name).", "table"),
		snapshotEstimate:  metrics.NewGauge(ctx, "postgres_snapshot_rows_estimate", "The rows the snapshot is expected to read, by table: the planner's estimate until the table is read, then the rows read.", "table"),
		snapshotProgress:  metrics.NewGauge(ctx, "postgres_snapshot_progress_ratio", "How much of the snapshot is read, from 0 to 1: rows read over rows expected, over every table, short of 1 until it is done."),
		snapshotRemaining: metrics.NewGauge(ctx, "postgres_snapshot_tables_remaining", "Tables the snapshot has yet to finish reading."),
		lagBytes:          metrics.NewGauge(ctx, "postgres_replication_lag_bytes", "WAL the server has written beyond the replication slot's confirmed LSN: what it keeps for this source."),
		lagSeconds:        metrics.NewGauge(ctx, "postgres_replication_lag_seconds", "How long ago the transaction of the last change the source read committed; 0 while every change read is acknowledged."),
		confirmedLSN:      metrics.NewGauge(ctx, "postgres_slot_confirmed_lsn", "The replication slot's confirmed LSN, as a number: the server may recycle the WAL before it."),
	}
}

// snapshotProgress follows the snapshot's reading of its tables, from the
// reader's goroutine; a nil one follows nothing.
type snapshotProgress struct {
	m         sourceMetrics
	tables    []string // the table label of each table, schema.name
	estimates []float64
	read      []float64
	remaining int // tables not read yet
}

// estimate starts following the snapshot of tables from index from on,
// each expected to have as many rows as the planner estimates; tables
// before from are read.
func (s *Source) estimate(ctx context.Context, from int) *snapshotProgress {
	p := &snapshotProgress{m: s.metrics, tables: make([]string, len(s.tables)), estimates: make([]float64, len(s.tables)), read: make([]float64, len(s.tables))}
	for i, t := range s.tables {
		p.tables[i] = t.schema + "." + t.name
	}
	for i := from; i < len(s.tables); i++ {
		t := s.tables[i]
		var plan []struct {
			Plan struct {
				Rows float64 `json:"Plan Rows"`
			}
		}
		var out []byte
		// An estimate is no reason to fail: without one, the table counts
		// as empty until it is read.
		if err := s.conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) SELECT 1 FROM "+t.ident).Scan(&out); err == nil && json.Unmarshal(out, &plan) == nil && len(plan) == 1 {
			p.estimates[i] = plan[0].Plan.Rows
		}
		p.m.snapshotEstimate.Set(p.estimates[i], p.tables[i])
	}
	p.remaining = len(s.tables) - from
	p.m.snapshotRemaining.Set(float64(p.remaining))
	p.show()
	return p
}

// readRows notes n rows read of table i.
func (p *snapshotProgress) readRows(i, n int) {
	if p == nil {
		return
	}
	p.read[i] += float64(n)
	p.estimates[i] = max(p.estimates[i], p.read[i])
	p.m.snapshotRows.Add(float64(n), p.tables[i])
	p.show()
}

// tableDone notes that table i is read.
func (p *snapshotProgress) tableDone(i int) {
	if p == nil {
		return
	}
	p.estimates[i] = p.read[i]
	p.remaining--
	p.m.snapshotEstimate.Set(p.read[i], p.tables[i])
	p.m.snapshotRemaining.Set(float64(p.remaining))
	p.show()
}

// show sets the snapshot's progress: rows read over rows expected, short
// of 1 until every table is read (an estimate may be short).
func (p *snapshotProgress) show() {
	var read, expected float64
	for i := range p.read {
		read += p.read[i]
		expected += p.estimates[i]
	}
	ratio := 1.0
	if p.remaining > 0 {
		ratio = 0.99
		if expected > 0 {
			ratio = min(ratio, read/expected)
		}
	}
	p.m.snapshotProgress.Set(ratio)
}

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
	var end, confirmed string
	err := conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text, confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1`, s.cfg.Slot.Name).Scan(&end, &confirmed)
	if err != nil {
		return err
	}
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
	if first, ok := s.backlog.oldest(); ok {
		from = min(from, first)
	}
	s.metrics.lagBytes.Set(float64(max(endLSN, from) - from))
	var seconds float64
	if committed := s.lastCommit.Load(); committed != 0 && s.acked.Load() < s.produced.Load() {
		seconds = max(0, time.Since(time.Unix(0, committed)).Seconds())
	}
	s.metrics.lagSeconds.Set(seconds)
	return nil
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
	commit, first pglogrepl.LSN // its commit record's LSN and its first
	unacked       int
}

// queued notes n changes queued of the transaction that starts at first
// and commits at commit.
func (b *backlog) queued(commit, first pglogrepl.LSN, n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if k := len(b.txs); k > 0 && b.txs[k-1].commit == commit {
		b.txs[k-1].unacked += n // the rest of a large transaction
		return
	}
	b.txs = append(b.txs, backlogTx{commit: commit, first: first, unacked: n})
}

// acked notes the acknowledgment of a change of the transaction that
// commits at commit; acknowledgments come in order.
func (b *backlog) acked(commit pglogrepl.LSN) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.txs) > 0 && b.txs[0].commit < commit {
		b.txs = b.txs[1:]
	}
	if len(b.txs) > 0 && b.txs[0].commit == commit {
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
	return b.txs[0].first, true
}
