package source

import (
	"context"
	"errors"
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
// relation (publish_via_partition_root, slot_publication.go), so that a
// record names the parent whichever partition holds its row, also a
// partition attached later. A partition named by itself is an ordinary
// table.

// partitionedWithoutKey is the error for a partitioned table without a
// primary key: the source reads a table without one by ctid (engine_chunk.go),
// which is a place in one partition, not a row's identity across them.
func partitionedWithoutKey(name string) error {
	return fmt.Errorf("partitioned table %s has no primary key: the source reads a partitioned table in key order, and a row's place (ctid) does not tell rows of different partitions apart; add one, with the partition key's columns (ALTER TABLE %s ADD PRIMARY KEY (...)), or name its partitions in parameter \"tables\" instead, each with REPLICA IDENTITY FULL or a primary key", name, name)
}

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

// checkNotAncestor fails when the stream reports changes under a table
// that is not read but is an ancestor of a partition that is: the
// publication publishes that partition's changes under the ancestor's name
// (publish_via_partition_root, set since Open, by another source sharing
// the publication, say), and the source would miss them otherwise.
func (s *Source) checkNotAncestor(ctx context.Context, relID uint32) error {
	read := make([]uint32, len(s.catalog.tables))
	for i, t := range s.catalog.tables {
		read[i] = t.oid
	}
	var schema, name, ancestorSchema, ancestor string
	err := s.conn.QueryRow(ctx, `
		WITH RECURSIVE down(oid) AS (
			SELECT $1::oid
			UNION ALL
			SELECT i.inhrelid FROM down JOIN pg_inherits i ON i.inhparent = down.oid)
		SELECT n.nspname, c.relname, an.nspname, ac.relname
		FROM down JOIN pg_class c ON c.oid = down.oid JOIN pg_namespace n ON n.oid = c.relnamespace,
			pg_class ac JOIN pg_namespace an ON an.oid = ac.relnamespace
		WHERE down.oid = ANY ($2::oid[]) AND down.oid <> $1 AND ac.oid = $1
		LIMIT 1`, relID, read).Scan(&schema, &name, &ancestorSchema, &ancestor)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return s.failedTo("look up the partitions of a table the publication reports", err)
	}
	partition, parent := pg.SQLName(schema, name), pg.SQLName(ancestorSchema, ancestor)
	return fmt.Errorf("publication %s now publishes the changes of partition %s under the name of %s (publish_via_partition_root, set since the source opened: by a source reading %s through the same publication?), so the source would miss them: give each source a publication of its own (parameter \"publication.name\"), or read %s", s.cfg.Publication.Name, partition, parent, parent, parent)
}
