package source

import (
	"context"
	"fmt"
	"slices"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/jackc/pgx/v5"
)

// A partitioned table (relkind 'p') is read through its parent, as one
// table: the snapshot reads the parent, which reads every partition, in
// the parent's key order (PostgreSQL requires the partition key in the
// primary key, so the parent's key is unique across partitions); the
// publication publishes the partitions' changes under the parent's
// relation (publish_via_partition_root, publication.go), so that a
// record names the parent whichever partition holds its row, also a
// partition attached later. A partition named by itself is an ordinary
// table.

// nestedPartition is a table matched that is a partition, at any depth,
// of another table matched.
type nestedPartition struct {
	oid      uint32
	name     string // schema-qualified, as an error names it
	ancestor string // the nearest ancestor matched
}

// leaveOutPartitions drops from oids the partitions of the other tables
// it holds, which a wildcard matched: their parent reads their rows,
// which would otherwise come twice. A partition that tables names beside
// its ancestor is an error.
func leaveOutPartitions(ctx context.Context, conn *pgx.Conn, oids, named []uint32) ([]uint32, error) {
	nested, err := nestedPartitions(ctx, conn, oids)
	if err != nil {
		return nil, err
	}
	for _, p := range nested {
		if slices.Contains(named, p.oid) {
			return nil, fmt.Errorf(`parameter "tables": %s is a partition of %s, which is read too: reading %s reads its rows, and its changes come under %s's name, so they would come twice; leave out %s, or name the partitions instead of %s`,
				p.name, p.ancestor, p.ancestor, p.ancestor, p.name, p.ancestor)
		}
		oids = slices.DeleteFunc(oids, func(oid uint32) bool { return oid == p.oid })
	}
	return oids, nil
}

// nestedPartitions returns the tables of oids that are partitions of
// others of oids.
func nestedPartitions(ctx context.Context, conn *pgx.Conn, oids []uint32) ([]nestedPartition, error) {
	// pg_inherits rather than pg_partition_ancestors, which PostgreSQL 11
	// lacks; a partition's ancestors are the tables it inherits from.
	rows, _ := conn.Query(ctx, `
		WITH RECURSIVE up(oid, ancestor, depth) AS (
			SELECT i.inhrelid, i.inhparent, 1 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhrelid = ANY ($1::oid[]) AND c.relispartition
			UNION ALL
			SELECT up.oid, i.inhparent, up.depth + 1 FROM up JOIN pg_inherits i ON i.inhrelid = up.ancestor
			JOIN pg_class c ON c.oid = i.inhrelid WHERE c.relispartition)
		SELECT DISTINCT ON (up.oid) up.oid, cn.nspname, c.relname, an.nspname, ac.relname
		FROM up JOIN pg_class c ON c.oid = up.oid JOIN pg_namespace cn ON cn.oid = c.relnamespace
		JOIN pg_class ac ON ac.oid = up.ancestor JOIN pg_namespace an ON an.oid = ac.relnamespace
		WHERE up.ancestor = ANY ($1::oid[])
		ORDER BY up.oid, up.depth`, oids)
	var nested []nestedPartition
	var p nestedPartition
	var schema, name, ancestorSchema, ancestor string
	_, err := pgx.ForEachRow(rows, []any{&p.oid, &schema, &name, &ancestorSchema, &ancestor}, func() error {
		p.name, p.ancestor = pg.SQLName(schema, name), pg.SQLName(ancestorSchema, ancestor)
		nested = append(nested, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look up the partitions of the tables read: %w", err)
	}
	return nested, nil
}
