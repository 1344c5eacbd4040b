package destination

import (
	"context"
	"testing"

	connmetrics "github.com/connkit/connkit/internal/metrics"
	"github.com/connkit/connkit/internal/metrics/metricstest"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// TestUserTypeChangesCounted: the user types created and the enum labels
// added count among the schema changes, by kind, next to the table's.
func TestUserTypeChangesCounted(t *testing.T) {
	is := is.New(t)
	url, _ := server.Database(t, ``)
	ctx, address := metricstest.Serve(t, t.Context(), connmetrics.Labels{ConnectorID: "p:destination", Plugin: "postgres", Version: "v0.1.0", Role: "destination"})
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
