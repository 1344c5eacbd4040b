package source

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
)

// publication is the publication the source streams the changes of its
// tables through, as the catalog describes it.
type publication struct {
	name    string
	ident   string // quoted
	exists  bool
	all     bool // FOR ALL TABLES
	viaRoot bool // publish_via_partition_root
}

// ensurePublication creates the publication for the tables, or adds to an
// existing one the tables it lacks. With a partitioned table among them,
// the publication publishes via the partition root (catalog_partition.go); an
// existing one that does not is changed to, before tables are added, so
// that no change of a partition comes under its own name once its parent
// is published. Every table must then be published under its own name.
func ensurePublication(ctx context.Context, conn *pgx.Conn, name string, tables []*sourceTable) error {
	p := publication{name: name, ident: pgx.Identifier{name}.Sanitize()}
	// pubviaroot, through to_jsonb: PostgreSQL 12 and earlier lack it.
	if err := conn.QueryRow(ctx, `SELECT count(*) > 0, coalesce(bool_or(puballtables), false), coalesce(bool_or((to_jsonb(p) ->> 'pubviaroot')::bool), false) FROM pg_publication p WHERE pubname = $1`, name).Scan(&p.exists, &p.all, &p.viaRoot); err != nil {
		return fmt.Errorf("look up publication %s: %w", name, err)
	}
	partitioned := partitionedTables(tables)
	if p.exists && !p.viaRoot && len(partitioned) > 0 {
		if err := p.publishViaRoot(ctx, conn, partitioned); err != nil {
			return err
		}
	}
	if !p.all {
		if err := p.addMissing(ctx, conn, tables, len(partitioned) > 0); err != nil {
			return err
		}
	}
	if len(partitioned) > 0 {
		if err := p.logListedPartitions(ctx, conn, partitioned); err != nil {
			return err
		}
	}
	return p.checkPublished(ctx, conn, tables)
}

// partitionedTables returns the idents of the partitioned tables.
func partitionedTables(tables []*sourceTable) []string {
	var out []string
	for _, t := range tables {
		if t.partitioned {
			out = append(out, t.ident)
		}
	}
	return out
}

// addMissing creates the publication for the tables, publishing via the
// partition root when viaRoot is set, or adds to it those it lacks.
func (p publication) addMissing(ctx context.Context, conn *pgx.Conn, tables []*sourceTable, viaRoot bool) error {
	var missing []string
	for _, t := range tables {
		var in bool
		if p.exists {
			if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid WHERE p.pubname = $1 AND r.prrelid = $2)`, p.name, t.oid).Scan(&in); err != nil {
				return fmt.Errorf("look up publication %s: %w", p.name, err)
			}
		}
		if !in {
			missing = append(missing, t.ident)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sql := fmt.Sprintf("CREATE PUBLICATION %s FOR TABLE %s", p.ident, strings.Join(missing, ", "))
	if viaRoot {
		sql += " WITH (publish_via_partition_root = true)"
	}
	if p.exists {
		sql = fmt.Sprintf("ALTER PUBLICATION %s ADD TABLE %s", p.ident, strings.Join(missing, ", "))
	}
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("create publication %s for %s (it needs ownership of the tables): %w", p.name, strings.Join(missing, ", "), err)
	}
	return nil
}

// publishViaRoot makes an existing publication publish the changes of
// partitions under their partitioned table, which concerns every reader
// of the publication: it says so.
func (p publication) publishViaRoot(ctx context.Context, conn *pgx.Conn, partitioned []string) error {
	if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER PUBLICATION %s SET (publish_via_partition_root = true)", p.ident)); err != nil {
		return fmt.Errorf("publication %s publishes the changes of partitions under their own names, and partitioned tables %s are read under theirs: ALTER PUBLICATION %s SET (publish_via_partition_root = true) failed (it needs ownership of the publication): %w",
			p.name, strings.Join(partitioned, ", "), p.ident, err)
	}
	sdk.Logger(ctx).Warn(fmt.Sprintf("postgres: publication %s published the changes of partitions under their own names: set publish_via_partition_root = true, so that the changes of partitioned tables %s come under theirs; every reader of the publication now gets a partition's changes under the name of its topmost partitioned table in the publication", p.name, strings.Join(partitioned, ", ")))
	return nil
}

// logListedPartitions says which partitions of the partitioned tables the
// publication also lists by name: they stay listed, and their changes come
// once, under the partitioned table's name.
func (p publication) logListedPartitions(ctx context.Context, conn *pgx.Conn, partitioned []string) error {
	rows, _ := conn.Query(ctx, `
		SELECT n.nspname, c.relname
		FROM pg_publication_rel r JOIN pg_publication pb ON pb.oid = r.prpubid
		JOIN pg_class c ON c.oid = r.prrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE pb.pubname = $1 AND c.relispartition
		AND EXISTS (SELECT 1 FROM pg_partition_ancestors(c.oid::regclass) a WHERE a.relid = ANY ($2::regclass[]))
		ORDER BY 1, 2`, p.name, partitioned)
	var listed []string
	var schema, name string
	_, err := pgx.ForEachRow(rows, []any{&schema, &name}, func() error {
		listed = append(listed, pg.SQLName(schema, name))
		return nil
	})
	if err != nil {
		return fmt.Errorf("look up the partitions publication %s lists: %w", p.name, err)
	}
	if len(listed) > 0 {
		sdk.Logger(ctx).Info(fmt.Sprintf("postgres: publication %s also lists partitions %s of the partitioned tables read; they stay listed, and their changes come once, under their partitioned table's name", p.name, strings.Join(listed, ", ")))
	}
	return nil
}

// checkPublished fails unless the publication publishes the changes of
// every table under the table's own name: a partition read by itself
// whose partitioned table the publication also holds, publishing via the
// root, has its changes published under that table's name, and the source
// would never see them.
func (p publication) checkPublished(ctx context.Context, conn *pgx.Conn, tables []*sourceTable) error {
	rows, _ := conn.Query(ctx, `SELECT schemaname::text, tablename::text FROM pg_publication_tables WHERE pubname = $1`, p.name)
	var published [][2]string
	var schema, name string
	_, err := pgx.ForEachRow(rows, []any{&schema, &name}, func() error {
		published = append(published, [2]string{schema, name})
		return nil
	})
	if err != nil {
		return fmt.Errorf("look up the tables of publication %s: %w", p.name, err)
	}
	for _, t := range tables {
		if !slices.Contains(published, [2]string{t.schema, t.name}) {
			name := pg.SQLName(t.schema, t.name)
			return fmt.Errorf("publication %s does not publish the changes of table %s under its name, so the source would not see them: a partition's changes come under the name of a partitioned table the publication holds when it publishes via the partition root (publish_via_partition_root); read that partitioned table instead, or set parameter \"publication.name\" to a publication of this source's own", p.name, name)
		}
	}
	return nil
}
