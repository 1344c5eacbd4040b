package destination

import (
	"context"
	"fmt"
	"testing"

	connmetrics "github.com/connkit/connkit/internal/metrics"
	"github.com/connkit/connkit/internal/metrics/metricstest"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// TestDestinationMetrics: rows by operation, runs by method, and records
// an exactly-once destination skips.
func TestDestinationMetrics(t *testing.T) {
	is := is.New(t)
	t.Setenv("CONDUIT_CONNECTOR_ID", "p:destination") // as Conduit sets it
	url, _ := server.Database(t, `CREATE TABLE users (id bigint PRIMARY KEY, name text)`)
	ctx, address := metricstest.Serve(t, t.Context(), connmetrics.Labels{ConnectorID: "p:destination", Plugin: "postgres", Version: "v0.1.0", Role: "destination"})
	raw := map[string]string{"url": url, "table": "users", "exactlyOnce.enabled": "true"}
	dst, err := sdk.NewDestination(New).New(raw)
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
		if got := metricstest.Sample(t, address, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}
