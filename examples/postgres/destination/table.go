package destination

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
)

// table is what the destination knows of a table: a description read
// from the catalog, cached, and replaced by a fresh one when a record
// names a column it does not know (see [Destination.missingColumns]) or
// when the destination changes the table. A description is never changed
// once read, so the Writes in flight share it without a lock; what they
// learn of the table by writing to it is in hints.
type table struct {
	name   string            // as configured, for messages
	ident  string            // quoted, possibly schema-qualified
	types  map[string]string // column name → type, as format_type spells it
	bases  map[string]string // column name → its type without a modifier (character varying for varchar(10), bpchar for char(3)), which statements cast to so that assigning to the column checks the modifier
	unique [][]string        // the columns of each primary key or unique constraint, sorted
	readIn uint64            // the batch in which the catalog was read
	// copyIn is set when COPY into the table does what INSERT does: a plain
	// or partitioned table without rules (which COPY does not apply), row
	// security (which COPY does not take) or columns GENERATED ALWAYS AS
	// IDENTITY (which COPY overrides where INSERT refuses a value).
	copyIn bool
	hints  *tableHints
	textEq textEquality // read when a run without a key first needs it
}

// tableHints is what Writes learn of a table by writing to it, shared by
// every description of it read again while the table stays as it is, and
// safe to use from concurrent Writes. A change the destination makes to
// the table starts afresh.
type tableHints struct {
	noCopy atomic.Bool // COPY failed for neither the data nor the system: statements only

	mu      sync.Mutex
	newRows insertFirst
	meta    string // the last postgres.columns found to need no change of the table
}

// tryInsert reports whether a run of creates is worth trying as a plain
// INSERT first (see [insertFirst]).
func (h *tableHints) tryInsert() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.newRows.try()
}

// inserted notes how a plain INSERT tried first went: without a conflict
// when ok.
func (h *tableHints) inserted(ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ok {
		h.newRows.succeeded()
	} else {
		h.newRows.failed()
	}
}

// fits reports whether the table was found to need no change for meta, a
// record's postgres.columns.
func (h *tableHints) fits(meta string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.meta == meta
}

// fit notes that the table needs no change for meta.
func (h *tableHints) fit(meta string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.meta = meta
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
// It is read from the catalog the first time, in batch, then cached.
func (d *Destination) table(ctx context.Context, name string, batch uint64) (*table, error) {
	d.mu.Lock()
	t, ok := d.tables[name]
	d.mu.Unlock()
	if ok {
		return t, nil
	}
	// Read without the lock, which other Writes need meanwhile; two Writes
	// that miss the same table both read it, and either reading serves.
	t, err := d.readTable(ctx, name)
	if err != nil {
		return nil, err
	}
	t.readIn, t.hints = batch, &tableHints{}
	d.mu.Lock()
	if cached, ok := d.tables[name]; ok {
		t = cached
	} else {
		d.tables[name] = t
	}
	d.mu.Unlock()
	return t, nil
}

// missingColumns returns the columns of columns that table t lacks, and
// the description of t to plan with. A column it does not know of may
// have been added since t was read: t is then read again, at most once per
// batch, and the fresh description, which replaces t in the cache, is
// returned; else t.
func (d *Destination) missingColumns(ctx context.Context, t *table, columns []string, batch uint64) (*table, []string, error) {
	unknown := func(t *table) []string {
		var out []string
		for _, c := range columns {
			if _, ok := t.types[c]; !ok {
				out = append(out, c)
			}
		}
		return out
	}
	missing := unknown(t)
	if len(missing) == 0 || t.readIn == batch {
		return t, missing, nil
	}
	fresh, err := d.readTable(ctx, t.name)
	if err != nil {
		if !sdk.IsRetryable(err) {
			err = sdk.RecordFault(err) // the table is gone: so is the column
		}
		return nil, nil, err
	}
	fresh.readIn, fresh.hints = batch, t.hints
	d.mu.Lock()
	if d.tables[t.name] == t {
		d.tables[t.name] = fresh
	}
	d.mu.Unlock()
	return fresh, unknown(fresh), nil
}

// readTable reads what the catalog says of the table called name.
func (d *Destination) readTable(ctx context.Context, name string) (*table, error) {
	parts, err := pg.SplitName(name)
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
	e := fmt.Errorf("%s %s: %s", what, name, pg.Reason(err, d.cfg.URL))
	if pg.Retryable(err) {
		return sdk.Retryable(e)
	}
	return e
}
