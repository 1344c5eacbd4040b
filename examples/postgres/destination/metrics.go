package destination

import (
	"context"

	"github.com/connkit/connkit/sdk/metrics"
)

// destinationMetrics are what the destination tells of its writes, beside
// what the SDK measures of every destination.
type destinationMetrics struct {
	rows          *metrics.Counter // by operation
	runs          *metrics.Counter // by method
	deduplicated  *metrics.Counter
	notFound      *metrics.Counter // by operation
	schemaChanges *metrics.Counter // by kind
}

func newDestinationMetrics(ctx context.Context) destinationMetrics {
	return destinationMetrics{
		rows:          metrics.NewCounter(ctx, "postgres_rows_total", "Rows written, by the statement's operation: insert, upsert, update (one row, without a key) or delete.", "operation"),
		runs:          metrics.NewCounter(ctx, "postgres_runs_total", "Runs of records (or, after a failure, parts of one) written with one statement, by method: copy (COPY, from 100 rows) or statement (one statement over arrays of values).", "method"),
		deduplicated:  metrics.NewCounter(ctx, "postgres_deduplicated_rows_total", "Records acknowledged without being written again, their positions being written already (exactlyOnce.enabled)."),
		notFound:      metrics.NewCounter(ctx, "postgres_rows_not_found_total", "Updates and deletes of records without a key whose old row (payload.before) the table did not have, by operation: update (its new row inserted) or delete (nothing changed).", "operation"),
		schemaChanges: metrics.NewCounter(ctx, "postgres_schema_changes_total", "Statements that changed a table before a record was written, by kind: create, add_column, rename_column, alter_type, create_type, add_value (auto.create, auto.evolve).", "kind"),
	}
}

// written notes rows written as class c, by method.
func (m destinationMetrics) written(c class, method string, rows int) {
	m.rows.Add(float64(rows), c.operation())
	m.runs.Add(1, method)
}

// operation names what the statement of class c does to rows.
func (c class) operation() string {
	switch c {
	case remove, deleteOne:
		return "delete"
	case insert:
		return "insert"
	case updateOne:
		return "update"
	}
	return "upsert"
}
