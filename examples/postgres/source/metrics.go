package source

import (
	"context"
	"encoding/json"

	"github.com/connkit/connkit/sdk/metrics"
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
	snapshotChunks    *metrics.Gauge
	lagBytes          *metrics.Gauge
	lagSeconds        *metrics.Gauge
	confirmedLSN      *metrics.Gauge
	slotWALStatus     *metrics.Gauge // by status
	slotSafeWALSize   *metrics.Gauge
}

func newSourceMetrics(ctx context.Context) sourceMetrics {
	return sourceMetrics{
		snapshotRows:      metrics.NewCounter(ctx, "postgres_snapshot_rows_total", "Rows the snapshot has read, by table (schema.name).", "table"),
		snapshotEstimate:  metrics.NewGauge(ctx, "postgres_snapshot_rows_estimate", "The rows the snapshot is expected to read, by table: the planner's estimate until the table is read, then the rows read.", "table"),
		snapshotProgress:  metrics.NewGauge(ctx, "postgres_snapshot_progress_ratio", "How much of the snapshot is read, from 0 to 1: rows read over rows expected, over every table, short of 1 until it is done."),
		snapshotRemaining: metrics.NewGauge(ctx, "postgres_snapshot_tables_remaining", "Tables the snapshot has yet to finish reading."),
		snapshotChunks:    metrics.NewGauge(ctx, "postgres_snapshot_chunks_in_flight", "Chunks of the snapshot planned and not yet handed on: being read, or waiting for their high watermark: at most snapshot.parallelism."),
		lagBytes:          metrics.NewGauge(ctx, "postgres_replication_lag_bytes", "WAL the server has written beyond the replication slot's confirmed LSN: what it keeps for this source."),
		lagSeconds:        metrics.NewGauge(ctx, "postgres_replication_lag_seconds", "How long ago the transaction of the last change the source read committed; 0 while every change read is acknowledged."),
		confirmedLSN:      metrics.NewGauge(ctx, "postgres_slot_confirmed_lsn", "The replication slot's confirmed LSN, as a number: the server may recycle the WAL before it."),
		slotWALStatus:     metrics.NewGauge(ctx, "postgres_slot_wal_status", "1 for the replication slot's wal_status (reserved, extended, unreserved, lost), 0 for the others: unreserved means the slot is about to lose WAL it needs, lost that it has (snapshot.mode when_needed then starts again at the next start).", "status"),
		slotSafeWALSize:   metrics.NewGauge(ctx, "postgres_slot_safe_wal_size_bytes", "WAL the server can write before the replication slot falls past max_slot_wal_keep_size and is invalidated; -1 when there is no limit (max_slot_wal_keep_size -1) or the slot is lost."),
	}
}

// snapshotProgress follows how far the snapshot has read its tables,
// from the engine; a nil one follows nothing.
type snapshotProgress struct {
	m         sourceMetrics
	estimates map[*sourceTable]float64
	read      map[*sourceTable]float64
	remaining int // tables not read yet
}

// followSnapshot starts following the snapshot of tables, each expected
// to have as many rows as the planner estimates.
func followSnapshot(ctx context.Context, conn *pgx.Conn, m sourceMetrics, tables []*sourceTable) *snapshotProgress {
	p := &snapshotProgress{m: m, estimates: map[*sourceTable]float64{}, read: map[*sourceTable]float64{}, remaining: len(tables)}
	for _, t := range tables {
		p.estimates[t] = plannedRows(ctx, conn, t)
		p.m.snapshotEstimate.Set(p.estimates[t], t.label())
	}
	p.m.snapshotRemaining.Set(float64(p.remaining))
	p.show()
	return p
}

// label is t's value of the table label: schema.name.
func (t *sourceTable) label() string { return t.schema + "." + t.name }

// plannedRows is how many rows the planner expects t to have. An estimate
// is no reason to fail: without one, the table counts as empty until it is
// read.
func plannedRows(ctx context.Context, conn *pgx.Conn, t *sourceTable) float64 {
	var plan []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		}
	}
	var out []byte
	if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) SELECT 1 FROM "+t.rows()).Scan(&out); err == nil && json.Unmarshal(out, &plan) == nil && len(plan) == 1 {
		return plan[0].Plan.Rows
	}
	return 0
}

// readRows notes n rows read of t.
func (p *snapshotProgress) readRows(t *sourceTable, n int) {
	if p == nil {
		return
	}
	p.m.snapshotRows.Add(float64(n), t.label())
	if _, followed := p.estimates[t]; followed {
		p.read[t] += float64(n)
		p.estimates[t] = max(p.estimates[t], p.read[t])
		p.show()
	}
}

// tableDone notes that t is read.
func (p *snapshotProgress) tableDone(t *sourceTable) {
	if p == nil {
		return
	}
	if _, followed := p.estimates[t]; !followed {
		return
	}
	p.estimates[t] = p.read[t]
	p.remaining--
	p.m.snapshotEstimate.Set(p.read[t], t.label())
	p.m.snapshotRemaining.Set(float64(p.remaining))
	p.show()
}

// show sets the snapshot's progress: rows read over rows expected, short
// of 1 until every table is read (an estimate may be short).
func (p *snapshotProgress) show() {
	var read, expected float64
	for t, e := range p.estimates {
		read += p.read[t]
		expected += e
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
