package source

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/jackc/pgx/v5"
)

// sourceTable is a table the source reads, as the catalog describes it.
type sourceTable struct {
	oid        uint32
	schema     string
	name       string
	ident      string            // quoted and schema-qualified, for SQL and positions
	collection string            // its records' opencdc.collection
	columns    []string          // stored columns, in attribute order (generated columns are not replicated)
	types      []string          // each column's type, as format_type spells it
	notNull    []bool            // each column's NOT NULL
	keys       []int             // the key's columns (catalog_identity.go), as indexes into columns, in key order; none: keyless
	meta       string            // the columns as the snapshot's records describe them (catalog_columns.go)
	defaults   map[string]string // the columns' defaults the records carry, by name (catalog_usertypes.go)
	userTypes  *userTypes        // the user types the columns use (catalog_usertypes.go)

	partitioned bool // a partitioned table, read through its parent (catalog_partition.go)
}

// rows is what the snapshot reads the table's rows from: the table ONLY,
// so that a parent by inheritance (not partitioning) leaves out its
// children's rows, whose changes stream under the children's names; a
// partitioned table through its parent, which reads every partition.
func (t *sourceTable) rows() string {
	if t.partitioned {
		return t.ident
	}
	return "ONLY " + t.ident
}

// keyNames returns the primary key's column names, in key order.
func (t *sourceTable) keyNames() []string {
	names := make([]string, len(t.keys))
	for i, k := range t.keys {
		names[i] = t.columns[k]
	}
	return names
}

// catalog is what the source knows of the tables it reads: their
// descriptions as Open found them, and the names of the column types
// changes carry, looked up as they come.
type catalog struct {
	tables    []*sourceTable // sorted by ident
	byOID     map[uint32]*sourceTable
	typeNames map[typeKey]string // format_type of each type and modifier asked for (catalog_columns.go)
}

func newCatalog(tables []*sourceTable) catalog {
	c := catalog{tables: tables, byOID: make(map[uint32]*sourceTable, len(tables))}
	for _, t := range tables {
		c.byOID[t.oid] = t
	}
	return c
}

// collectionName is a table's opencdc.collection: its name for a table in
// public, schema.name otherwise, with a part double-quoted when it contains
// a dot or a quote, the way the postgres destination reads table names.
func collectionName(schema, name string) string {
	q := func(s string) string {
		if strings.ContainsAny(s, `."`) {
			return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
		}
		return s
	}
	if schema == "public" {
		return q(name)
	}
	return q(schema) + "." + q(name)
}

// resolveTables finds the tables the patterns name (table, schema.table,
// * for every table in public, schema.* for every table in schema) and
// describes them, sorted by their quoted names. Every table must exist, be
// readable and have a replica identity (catalog_identity.go). A wildcard leaves out
// the table named by state (the source's own, see engine_state.go), and the
// partitions of the partitioned tables read (catalog_partition.go).
func resolveTables(ctx context.Context, conn *pgx.Conn, patterns []string, state string) ([]*sourceTable, error) {
	var oids, named []uint32
	for _, p := range patterns {
		found, wildcard, err := matchTables(ctx, conn, strings.TrimSpace(p), state)
		if err != nil {
			return nil, err
		}
		oids = append(oids, found...)
		if !wildcard {
			named = append(named, found...)
		}
	}
	slices.Sort(oids)
	oids = slices.Compact(oids)
	oids, err := leaveOutPartitions(ctx, conn, oids, named)
	if err != nil {
		return nil, err
	}

	tables := make([]*sourceTable, 0, len(oids))
	for _, oid := range oids {
		t, err := describeTable(ctx, conn, oid)
		if err != nil {
			return nil, err
		}
		tables = append(tables, t)
	}
	// Sorted as positions name them, so that a position whose table is no
	// longer read still finds its place among those that are.
	slices.SortFunc(tables, func(a, b *sourceTable) int { return strings.Compare(a.ident, b.ident) })
	return tables, nil
}

// matchTables returns the OIDs of the tables pattern p names, and whether
// p is a wildcard.
func matchTables(ctx context.Context, conn *pgx.Conn, p, state string) ([]uint32, bool, error) {
	parts, err := pg.SplitName(p)
	if err != nil {
		return nil, false, fmt.Errorf(`parameter "tables": %w`, err)
	}
	if parts[len(parts)-1] == "*" {
		schema := "public"
		if len(parts) == 2 {
			schema = parts[0]
		}
		rows, _ := conn.Query(ctx, `
			SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND c.oid IS DISTINCT FROM to_regclass($2)`, schema, state)
		found, err := pgx.CollectRows(rows, pgx.RowTo[uint32])
		if err != nil {
			return nil, false, fmt.Errorf("list the tables of schema %s: %w", schema, err)
		}
		if len(found) == 0 {
			return nil, false, fmt.Errorf(`parameter "tables": %q matches no table: schema %s has none`, p, schema)
		}
		return found, true, nil
	}
	var oid *uint32
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1)::oid`, pgx.Identifier(parts).Sanitize()).Scan(&oid); err != nil {
		return nil, false, fmt.Errorf("look up table %s: %w", p, err)
	}
	if oid == nil {
		return nil, false, fmt.Errorf(`parameter "tables": table %s does not exist`, p)
	}
	return []uint32{*oid}, false, nil
}

// describeTable reads what the catalog says of the table with the given
// OID, which must be a readable table whose replica identity lets the
// source tell its rows apart (catalog_identity.go).
func describeTable(ctx context.Context, conn *pgx.Conn, oid uint32) (*sourceTable, error) {
	t := &sourceTable{oid: oid}
	var id identity
	var readable bool
	var kind string
	err := conn.QueryRow(ctx, `
		SELECT n.nspname, c.relname, c.relkind::text, has_table_privilege(c.oid, 'SELECT'), c.relreplident::text,
			array(SELECT a.attname::text FROM pg_attribute a
				WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
				ORDER BY a.attnum),
			array(SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
				WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
				ORDER BY a.attnum),
			array(SELECT a.attnotnull FROM pg_attribute a
				WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
				ORDER BY a.attnum),
			`+indexColumns("i.indisprimary")+`,
			`+indexColumns("i.indisreplident")+`
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = $1`, oid).Scan(&t.schema, &t.name, &kind, &readable, &id.replident, &t.columns, &t.types, &t.notNull, &id.primary, &id.index)
	if err != nil {
		return nil, fmt.Errorf("describe table %d: %w", oid, err)
	}
	t.ident = pgx.Identifier{t.schema, t.name}.Sanitize()
	t.collection = collectionName(t.schema, t.name)
	t.partitioned = kind == "p"
	// What the source can read.
	name := pg.SQLName(t.schema, t.name)
	switch {
	case kind != "r" && kind != "p":
		return nil, fmt.Errorf(`parameter "tables": %s is not a table (only ordinary and partitioned tables can be read)`, name)
	case !readable:
		return nil, fmt.Errorf("permission denied: the connection's role may not SELECT from table %s (GRANT SELECT ON %s TO the role)", name, name)
	case t.partitioned && len(id.primary) == 0:
		return nil, partitionedWithoutKey(name) // catalog_partition.go
	}
	keys, err := id.keyColumns(name)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		t.keys = append(t.keys, slices.Index(t.columns, k))
	}
	if err := t.readUserTypes(ctx, conn); err != nil {
		return nil, err
	}
	t.meta = t.snapshotColumns()
	return t, nil
}

// indexColumns is the subquery of the column names, in index order, of
// the table c's index that cond picks.
func indexColumns(cond string) string {
	return `array(SELECT a.attname::text FROM pg_index i
				CROSS JOIN unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
				JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
				WHERE i.indrelid = c.oid AND ` + cond + `
				ORDER BY k.ord)`
}

// keyless reports whether t's rows have no key: REPLICA IDENTITY FULL
// without a primary key (catalog_identity.go).
func (t *sourceTable) keyless() bool { return len(t.keys) == 0 }
