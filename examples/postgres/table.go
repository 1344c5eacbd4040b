package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
)

// table is what the destination knows of a table: read from the catalog
// once, then cached, and read again when a record names a column it does
// not know (see [Destination.checkColumns]).
type table struct {
	name    string            // as configured, for messages
	ident   string            // quoted, possibly schema-qualified
	types   map[string]string // column name → type, as format_type spells it
	bases   map[string]string // column name → its type without a modifier (character varying for varchar(10), bpchar for char(3)), which statements cast to so that assigning to the column checks the modifier
	unique  [][]string        // the columns of each primary key or unique constraint, sorted
	readIn  uint64            // the batch in which the catalog was last read
	newRows insertFirst       // only Write touches it, and Write is never concurrent
	// copyIn is set when COPY into the table does what INSERT does: a plain
	// or partitioned table without rules (which COPY does not apply), row
	// security (which COPY does not take) or columns GENERATED ALWAYS AS
	// IDENTITY (which COPY overrides where INSERT refuses a value).
	copyIn bool
	noCopy bool   // COPY failed for neither the data nor the system: statements only
	meta   string // the last postgres.columns found to need no change of it
}

// upsertable reports whether an upsert on keys (sorted) has a constraint
// to detect its conflicts.
func (t *table) upsertable(keys []string) bool {
	for _, u := range t.unique {
		if slices.Equal(u, keys) {
			return true
		}
	}
	return false
}

// insertFirst decides whether a run of creates is worth trying as a plain
// INSERT before the upsert. A plain insert costs the database about 40%
// less than INSERT … ON CONFLICT (BenchmarkUpsertStrategies: 630-670k
// against 390k rows/s), but a conflict aborts it, and the upsert then does
// the work again. So after each conflict in a row, it skips twice as many
// runs (up to 64) before it tries again.
type insertFirst struct {
	skip     int // runs still to skip
	failures int // conflicts in a row, up to 7
}

func (f *insertFirst) try() bool {
	if f.skip > 0 {
		f.skip--
		return false
	}
	return true
}

func (f *insertFirst) succeeded() { f.failures = 0 }

func (f *insertFirst) failed() {
	f.failures = min(f.failures+1, 7)
	f.skip = 1 << (f.failures - 1) // 1, 2, 4, … 64
}

// table returns the table called name: "table" or "schema.table", each
// part used as written (a part may be double-quoted to contain a dot).
// It is read from the catalog the first time, then cached.
func (d *Destination) table(ctx context.Context, name string) (*table, error) {
	d.mu.Lock()
	t, ok := d.tables[name]
	d.mu.Unlock()
	if ok {
		return t, nil
	}
	t, err := d.readTable(ctx, name)
	if err != nil {
		return nil, err
	}
	t.readIn = d.batch
	d.mu.Lock()
	d.tables[name] = t
	d.mu.Unlock()
	return t, nil
}

// missingColumns returns the columns of columns that table t lacks. A
// column it does not know of may have been added since t was read: t is
// then read again, at most once per batch.
func (d *Destination) missingColumns(ctx context.Context, t *table, columns []string) ([]string, error) {
	unknown := func() []string {
		var out []string
		for _, c := range columns {
			if _, ok := t.types[c]; !ok {
				out = append(out, c)
			}
		}
		return out
	}
	missing := unknown()
	if len(missing) == 0 || t.readIn == d.batch {
		return missing, nil
	}
	fresh, err := d.readTable(ctx, t.name)
	if err != nil {
		if !sdk.IsRetryable(err) {
			err = sdk.RecordFault(err) // the table is gone: so is the column
		}
		return nil, err
	}
	t.types, t.bases, t.unique, t.copyIn, t.readIn = fresh.types, fresh.bases, fresh.unique, fresh.copyIn, d.batch
	return unknown(), nil
}

// readTable reads what the catalog says of the table called name.
func (d *Destination) readTable(ctx context.Context, name string) (*table, error) {
	parts, err := splitName(name)
	if err != nil {
		return nil, err
	}
	ident := pgx.Identifier(parts).Sanitize()
	rows, err := d.pool.Query(ctx, `
		SELECT a.attname, format_type(a.atttypid, a.atttypmod), format_type(a.atttypid, -1)
		FROM pg_attribute a
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, ident)
	if err != nil {
		return nil, d.catalogError("read the columns of table", name, err)
	}
	t := &table{name: name, ident: ident, types: map[string]string{}, bases: map[string]string{}}
	for rows.Next() {
		var col, typ, base string
		if err := rows.Scan(&col, &typ, &base); err != nil {
			return nil, d.catalogError("read the columns of table", name, err)
		}
		t.types[col], t.bases[col] = typ, base
	}
	if err := rows.Err(); err != nil {
		return nil, d.catalogError("read the columns of table", name, err)
	}
	if len(t.types) == 0 {
		return nil, errNoTable{name}
	}
	// Unique indexes on plain columns, without a predicate: the ones
	// ON CONFLICT (columns) can use.
	rows, err = d.pool.Query(ctx, `
		SELECT array_agg(a.attname::text ORDER BY a.attname)
		FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
		WHERE i.indrelid = to_regclass($1) AND i.indisunique AND i.indpred IS NULL AND NOT 0 = ANY (i.indkey)
		GROUP BY i.indexrelid`, ident)
	if err != nil {
		return nil, d.catalogError("read the unique constraints of table", name, err)
	}
	if t.unique, err = pgx.CollectRows(rows, pgx.RowTo[[]string]); err != nil {
		return nil, d.catalogError("read the unique constraints of table", name, err)
	}
	err = d.pool.QueryRow(ctx, `
		SELECT c.relkind IN ('r', 'p') AND NOT c.relhasrules AND NOT c.relrowsecurity
			AND NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attidentity = 'a' AND NOT a.attisdropped)
		FROM pg_class c WHERE c.oid = to_regclass($1)`, ident).Scan(&t.copyIn)
	if err != nil {
		return nil, d.catalogError("read the kind of table", name, err)
	}
	return t, nil
}

// errNoTable is the error of a table that does not exist.
type errNoTable struct{ name string }

func (e errNoTable) Error() string {
	return fmt.Sprintf("table %s does not exist (or has no columns)", e.name)
}

// catalogError is err, from reading what the catalog says of table name;
// retryable when the system failed (the catalog is read again).
func (d *Destination) catalogError(what, name string, err error) error {
	e := fmt.Errorf("%s %s: %s", what, name, reason(err, d.cfg.URL))
	if retryable(err) {
		return sdk.Retryable(e)
	}
	return e
}

// splitName splits a table name at dots outside double quotes.
func splitName(name string) ([]string, error) {
	var parts []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '"' && quoted && i+1 < len(name) && name[i+1] == '"':
			cur.WriteByte('"')
			i++
		case c == '"':
			quoted = !quoted
		case c == '.' && !quoted:
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	parts = append(parts, cur.String())
	if quoted || len(parts) > 2 || parts[0] == "" || parts[len(parts)-1] == "" {
		return nil, fmt.Errorf("table name %q: expected table or schema.table", name)
	}
	return parts, nil
}
