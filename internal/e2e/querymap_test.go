package e2e

import (
	"testing"

	"github.com/jackc/pgx/v5"
)

// queryMap runs q, whose rows are each a key and its value, and returns
// the values by key; it fails t if the query or a row fails.
func queryMap[K comparable, V any](t *testing.T, conn *pgx.Conn, q string) map[K]V {
	t.Helper()
	rows, err := conn.Query(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	out := map[K]V{}
	for rows.Next() {
		var k K
		var v V
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
