package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	connmetrics "github.com/connkit/connkit/internal/metrics"
	"github.com/connkit/connkit/internal/metrics/metricstest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/matryer/is"
)

// measured returns ctx carrying the metrics of a connector instance of
// role, as the plugin server passes them, and where they are served.
func measured(t *testing.T, ctx context.Context, role string) (context.Context, string) {
	t.Helper()
	set := connmetrics.New(connmetrics.Labels{ConnectorID: "p:" + role, Plugin: "postgres", Version: Connector.Version, Role: role})
	address, stop, err := set.Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return connmetrics.NewContext(ctx, set), address
}

// sample returns the value of name with labels (besides the instance's)
// at address.
func sample(t *testing.T, address, name string, labels ...string) float64 {
	t.Helper()
	v, ok := lookup(t, address, name, labels...)
	if !ok {
		t.Fatalf("no sample %s%v at %s", name, labels, address)
	}
	return v
}

// lookup returns the value of name with labels at address, if it has
// exactly one.
func lookup(t *testing.T, address, name string, labels ...string) (float64, bool) {
	t.Helper()
	got, err := metricstest.Scrape(address)
	if err != nil {
		t.Fatal(err)
	}
	v, n := got.Sum(name, labels...)
	return v, n == 1
}

// eventually waits up to a minute for f to hold of the sample name with
// labels.
func eventually(t *testing.T, address, what string, f func(float64) bool, name string, labels ...string) float64 {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		v, ok := lookup(t, address, name, labels...)
		if ok && f(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s stayed at %v, never %s", name, v, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSourceMetrics: the snapshot's progress per table reaches its rows
// and 100%; replication lag, in bytes and seconds, rises while changes
// wait for Conduit and returns to 0 once they are acknowledged.
func TestSourceMetrics(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `
		CREATE TABLE a (id int PRIMARY KEY, v text);
		INSERT INTO a SELECT i, repeat('x', 20) FROM generate_series(1, 2500) i;
		CREATE TABLE b (id int PRIMARY KEY);
		INSERT INTO b SELECT i FROM generate_series(1, 700) i;`)
	ctx, address := measured(t, t.Context(), "source")
	raw := map[string]string{"url": url, "tables": "a,b", "snapshot.fetchSize": "1000", "slot.name": url[strings.LastIndex(url, "/")+1 : strings.Index(url, "?")]}
	src, err := Connector.Source.New(raw)
	is.NoErr(err)
	t.Cleanup(func() { src.Teardown(context.Background()) })
	is.NoErr(src.Open(ctx, nil))
	s := src.(*Source)

	// The planner's estimate of a table not yet read, without ANALYZE.
	is.True(eventually(t, address, "set", func(v float64) bool { return v > 0 }, "connkit_postgres_snapshot_rows_estimate", "table=public.a") > 0)
	snap := readN(t, s, 3200)
	ackAll(t, s, snap)
	eventually(t, address, "1", func(v float64) bool { return v == 1 }, "connkit_postgres_snapshot_progress_ratio")
	for table, rows := range map[string]float64{"public.a": 2500, "public.b": 700} {
		is.Equal(sample(t, address, "connkit_postgres_snapshot_rows_total", "table="+table), rows)
		is.Equal(sample(t, address, "connkit_postgres_snapshot_rows_estimate", "table="+table), rows)
	}
	is.Equal(sample(t, address, "connkit_postgres_snapshot_tables_remaining"), 0.0)

	// A burst the source holds without Conduit acknowledging it.
	exec(t, conn, `INSERT INTO a SELECT i, repeat('y', 200) FROM generate_series(10001, 30000) i`)
	bytes := eventually(t, address, "above 1 MB", func(v float64) bool { return v > 1e6 }, "connkit_postgres_replication_lag_bytes")
	seconds := eventually(t, address, "above 0", func(v float64) bool { return v > 0 }, "connkit_postgres_replication_lag_seconds")
	t.Logf("lag during the burst: %.0f bytes, %.3f s", bytes, seconds)
	before := sample(t, address, "connkit_postgres_slot_confirmed_lsn")

	ackAll(t, s, readN(t, s, 20000))
	eventually(t, address, "0", func(v float64) bool { return v == 0 }, "connkit_postgres_replication_lag_bytes")
	eventually(t, address, "0", func(v float64) bool { return v == 0 }, "connkit_postgres_replication_lag_seconds")
	is.True(sample(t, address, "connkit_postgres_slot_confirmed_lsn") > before)
}

// TestDestinationMetrics: rows by operation, runs by method, and records
// an exactly-once destination skips.
func TestDestinationMetrics(t *testing.T) {
	is := is.New(t)
	t.Setenv("CONDUIT_CONNECTOR_ID", "p:destination") // as Conduit sets it
	url, _ := server.Database(t, `CREATE TABLE users (id bigint PRIMARY KEY, name text)`)
	ctx, address := measured(t, t.Context(), "destination")
	raw := map[string]string{"url": url, "table": "users", "exactlyOnce.enabled": "true"}
	dst, err := Connector.Destination.New(raw)
	is.NoErr(err)
	t.Cleanup(func() { dst.Teardown(context.Background()) })
	is.NoErr(dst.Open(ctx))

	var records []sdk.Record
	for i := range 150 { // COPY, from 100 rows
		records = append(records, rec(fmt.Sprint(i), sdk.OperationCreate, sdk.StructuredData{"id": i}, sdk.StructuredData{"name": "n"}))
	}
	for i := range 5 {
		records = append(records, rec(fmt.Sprint("u", i), sdk.OperationUpdate, sdk.StructuredData{"id": i}, sdk.StructuredData{"name": "m"}))
	}
	for i := range 3 {
		records = append(records, rec(fmt.Sprint("d", i), sdk.OperationDelete, sdk.StructuredData{"id": 100 + i}, nil))
	}
	n, err := dst.Write(ctx, records)
	is.NoErr(err)
	is.Equal(n, len(records))
	// A replay of the last 10: written before, so skipped.
	n, err = dst.Write(ctx, records[len(records)-10:])
	is.NoErr(err)
	is.Equal(n, 10)

	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"connkit_postgres_rows_total", []string{"operation=insert"}, 150},
		{"connkit_postgres_rows_total", []string{"operation=upsert"}, 5},
		{"connkit_postgres_rows_total", []string{"operation=delete"}, 3},
		{"connkit_postgres_runs_total", []string{"method=copy"}, 1},
		{"connkit_postgres_runs_total", []string{"method=statement"}, 2},
		{"connkit_postgres_deduplicated_rows_total", nil, 10},
	} {
		if got := sample(t, address, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
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
