package source

import (
	"context"
	"strings"
	"testing"

	connmetrics "github.com/connkit/connkit/internal/metrics"
	"github.com/connkit/connkit/internal/metrics/metricstest"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/matryer/is"
)

// TestSourceMetrics: the snapshot's progress per table reaches its rows
// and 100%, a chunk in flight while it is read; replication lag, in bytes and seconds, rises while changes
// wait for Conduit and returns to 0 once they are acknowledged.
func TestSourceMetrics(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `
		CREATE TABLE a (id int PRIMARY KEY, v text);
		INSERT INTO a SELECT i, repeat('x', 20) FROM generate_series(1, 2500) i;
		CREATE TABLE b (id int PRIMARY KEY);
		INSERT INTO b SELECT i FROM generate_series(1, 700) i;`)
	ctx, address := metricstest.Serve(t, t.Context(), connmetrics.Labels{ConnectorID: "p:source", Plugin: "postgres", Version: "v0.1.0", Role: "source"})
	raw := map[string]string{"url": url, "tables": "a,b", "snapshot.fetchSize": "1000", "slot.name": url[strings.LastIndex(url, "/")+1 : strings.Index(url, "?")]}
	src, err := sdk.NewSource(New).New(raw)
	is.NoErr(err)
	t.Cleanup(func() { src.Teardown(context.Background()) })
	is.NoErr(src.Open(ctx, nil))
	s := src.(*Source)

	// The planner's estimate of a table not yet read, without ANALYZE.
	is.True(metricstest.Eventually(t, address, "set", func(v float64) bool { return v > 0 }, "connkit_postgres_snapshot_rows_estimate", "table=public.a") > 0)
	// The second chunk is read while the first waits to be taken.
	metricstest.Eventually(t, address, "1", func(v float64) bool { return v == 1 }, "connkit_postgres_snapshot_chunks_in_flight")
	snap := readN(t, s, 3200)
	ackAll(t, s, snap)
	metricstest.Eventually(t, address, "1", func(v float64) bool { return v == 1 }, "connkit_postgres_snapshot_progress_ratio")
	for table, rows := range map[string]float64{"public.a": 2500, "public.b": 700} {
		is.Equal(metricstest.Sample(t, address, "connkit_postgres_snapshot_rows_total", "table="+table), rows)
		is.Equal(metricstest.Sample(t, address, "connkit_postgres_snapshot_rows_estimate", "table="+table), rows)
	}
	is.Equal(metricstest.Sample(t, address, "connkit_postgres_snapshot_tables_remaining"), 0.0)
	is.Equal(metricstest.Sample(t, address, "connkit_postgres_snapshot_chunks_in_flight"), 0.0)

	// A burst the source holds without Conduit acknowledging it.
	pgtest.Exec(t, conn, `INSERT INTO a SELECT i, repeat('y', 200) FROM generate_series(10001, 30000) i`)
	bytes := metricstest.Eventually(t, address, "above 1 MB", func(v float64) bool { return v > 1e6 }, "connkit_postgres_replication_lag_bytes")
	seconds := metricstest.Eventually(t, address, "above 0", func(v float64) bool { return v > 0 }, "connkit_postgres_replication_lag_seconds")
	t.Logf("lag during the burst: %.0f bytes, %.3f s", bytes, seconds)
	before := metricstest.Sample(t, address, "connkit_postgres_slot_confirmed_lsn")

	ackAll(t, s, readN(t, s, 20000))
	metricstest.Eventually(t, address, "0", func(v float64) bool { return v == 0 }, "connkit_postgres_replication_lag_bytes")
	metricstest.Eventually(t, address, "0", func(v float64) bool { return v == 0 }, "connkit_postgres_replication_lag_seconds")
	is.True(metricstest.Sample(t, address, "connkit_postgres_slot_confirmed_lsn") > before)
}

// TestBacklog: the oldest transaction not all acknowledged, through a
// large transaction queued in parts and acknowledgments past one.
func TestBacklog(t *testing.T) {
	is := is.New(t)
	oldest := func(b *backlog) pglogrepl.LSN {
		first, ok := b.oldest()
		if !ok {
			return 0
		}
		return first
	}
	var b backlog
	b.queued(100, 10, 2)
	b.queued(100, 10, 1) // the rest of it
	b.queued(200, 150, 1)
	is.Equal(oldest(&b), pglogrepl.LSN(10))
	b.acked(100)
	b.acked(100)
	is.Equal(oldest(&b), pglogrepl.LSN(10)) // one change left
	b.acked(100)
	is.Equal(oldest(&b), pglogrepl.LSN(150))
	b.acked(200)
	is.Equal(oldest(&b), pglogrepl.LSN(0))
	b.queued(300, 250, 5)
	b.acked(400) // past it
	is.Equal(oldest(&b), pglogrepl.LSN(0))

	var off *backlog // metrics off
	off.queued(1, 1, 1)
	off.acked(1)
	is.Equal(oldest(off), pglogrepl.LSN(0))
}
