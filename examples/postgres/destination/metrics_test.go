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
	ctx, address := served(t)
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

// TestUserTypeChangesCounted: the user types created and the enum labels
// added count among the schema changes, by kind, next to the table's.
func TestUserTypeChangesCounted(t *testing.T) {
	is := is.New(t)
	url, _ := server.Database(t, ``)
	ctx, address := served(t)
	dst, err := sdk.NewDestination(New).New(map[string]string{"url": url})
	is.NoErr(err)
	t.Cleanup(func() { dst.Teardown(context.Background()) })
	is.NoErr(dst.Open(ctx))

	cols := `[{"name":"id","type":"integer","notNull":true,"key":1},{"name":"s","type":"stat"},{"name":"g","type":"grade"}]`
	grade := `{"name":"grade","kind":"domain","base":"integer","checks":["CHECK ((VALUE > 0))"]}`
	write := func(pos, labels, value string) {
		t.Helper()
		n, err := dst.Write(ctx, []sdk.Record{typed(pos, cols, `[{"name":"stat","kind":"enum","labels":`+labels+`},`+grade+`]`,
			sdk.StructuredData{"id": pos}, sdk.StructuredData{"s": value, "g": 1})})
		is.NoErr(err)
		is.Equal(n, 1)
	}
	write("1", `["new","paid"]`, "new")
	write("2", `["new","paid"]`, "paid")
	write("3", `["new","held","paid","gone"]`, "held")

	for kind, want := range map[string]float64{"create_type": 2, "create": 1, "add_value": 2} {
		if got := metricstest.Sample(t, address, "connkit_postgres_schema_changes_total", "kind="+kind); got != want {
			t.Errorf("connkit_postgres_schema_changes_total{kind=%s} = %v, want %v", kind, got, want)
		}
	}
}

// served returns a context carrying the metrics of a destination, as the
// plugin server passes them, and where they are served.
func served(t *testing.T) (context.Context, string) {
	return metricstest.Serve(t, t.Context(), connmetrics.Labels{ConnectorID: "p:destination", Plugin: "postgres", Version: "v0.1.0", Role: "destination"})
}
