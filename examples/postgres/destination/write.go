package destination

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// class is what a statement does with its rows.
type class int

const (
	upsert class = iota // update with a key
	create              // create, snapshot with a key: an upsert, tried as a plain insert first
	insert              // create, snapshot, update without a key
	remove              // delete
)

// row is one record's values: key columns come from its key when the key
// has them, every other column from its payload.
type row struct {
	position sdk.Position
	key      map[string]any
	values   map[string]any
}

func (r row) get(col string, isKey bool) any {
	if isKey {
		if v, ok := r.key[col]; ok {
			return v
		}
	}
	return r.values[col]
}

// run is consecutive records written by one statement: same table, same
// class, same key columns and same columns.
type run struct {
	start   int // index of its first record in the batch
	table   *table
	class   class
	keys    []string // key columns, sorted
	columns []string // columns written (for a delete, the key columns), sorted
	rows    []row
}

func (r *run) same(o *run) bool {
	return r.table == o.table && r.class == o.class && slices.Equal(r.keys, o.keys) && slices.Equal(r.columns, o.columns)
}

// plan groups records into runs. If a record cannot be planned, the runs
// cover the records before it and the error names it; if its table needs
// a change first, they cover the records before it and the change is
// returned.
func (d *Destination) plan(ctx context.Context, records []sdk.Record) ([]*run, int, *schemaChange, error) {
	batch := d.batches.Add(1)
	var runs []*run
	var next run // the record being planned, reused while it joins the last run
	for i, rec := range records {
		last := &run{}
		if len(runs) > 0 {
			last = runs[len(runs)-1]
		}
		rw, change, err := d.planRecord(ctx, rec, batch, last, &next)
		if err != nil {
			return runs, i, nil, markLike(err, fmt.Errorf("record at position %q: %w", rec.Position, err))
		}
		if change != nil {
			return runs, i, change, nil
		}
		if len(runs) > 0 && last.same(&next) {
			last.rows = append(last.rows, rw)
			continue
		}
		// Checked once per run: its records share table, class and keys.
		if (next.class == upsert || next.class == create) && !next.table.upsertable(next.keys) {
			return runs, i, nil, fmt.Errorf("record at position %q: table %s has no primary key or unique constraint on exactly the key columns (%s), which an upsert needs: add one, or set the key parameter to the columns of one",
				rec.Position, next.table.name, strings.Join(next.keys, ", "))
		}
		r := next
		r.start, r.rows = i, []row{rw}
		runs = append(runs, &r)
	}
	return runs, len(records), nil, nil
}

// markLike returns err marked as mark is: as a record's fault, as
// retryable, or neither.
func markLike(mark, err error) error {
	switch {
	case sdk.IsRetryable(mark):
		return sdk.Retryable(err)
	case sdk.IsRecordFault(mark):
		return sdk.RecordFault(err)
	}
	return err
}

// planRecord fills in r's table, class, keys and columns for rec, planned
// in batch, and returns its row, or the change its table needs first
// (auto.create, auto.evolve). last is the run before it, whose key and
// column lists it shares when it can. What is wrong with the record itself
// (its data, its table when its metadata names it) is its fault.
func (d *Destination) planRecord(ctx context.Context, rec sdk.Record, batch uint64, last, r *run) (row, *schemaChange, error) {
	name, err := d.tableOf(rec)
	if err != nil {
		return row{}, nil, sdk.RecordFault(err)
	}
	key, err := fields("key", rec.Key)
	if raw, ok := rec.Key.(sdk.RawData); err != nil && ok && len(d.cfg.Key) == 1 {
		key, err = map[string]any{d.cfg.Key[0]: string(raw)}, nil // a plain raw key is the one key column's value
	}
	if err != nil {
		return row{}, nil, sdk.RecordFault(err)
	}
	var values map[string]any
	if rec.Operation != sdk.OperationDelete {
		if values, err = fields("payload.after", rec.Payload.After); err != nil {
			return row{}, nil, sdk.RecordFault(err)
		}
	}
	meta, hasMeta := rec.Metadata[pg.ColumnsKey]
	var described []pg.Column
	if hasMeta && (d.cfg.Auto.Create || d.cfg.Auto.Evolve) {
		if described, err = d.columnsOf(meta); err != nil {
			return row{}, nil, sdk.RecordFault(err)
		}
	}
	t, err := d.table(ctx, name, batch)
	var noTable errNoTable
	if errors.As(err, &noTable) && d.cfg.Auto.Create {
		if change, err := d.typesFor(ctx, name, rec.Metadata); change != nil || err != nil {
			return row{}, change, err
		}
		change, err := d.createFor(ctx, name, described, key, values)
		return row{}, change, err
	}
	if err != nil {
		if (d.cfg.Table == "" || strings.Contains(d.cfg.Table, "{{")) && !sdk.IsRetryable(err) {
			err = sdk.RecordFault(err) // the table the record names
		}
		return row{}, nil, err
	}
	if described != nil {
		key, values = d.renamed(t, described, key, values)
	}
	keys := d.keys
	if len(keys) == 0 {
		keys = sortedKeys(key, nil, last.keys)
	}
	*r = run{table: t, keys: keys}
	switch rec.Operation {
	case sdk.OperationDelete:
		r.class = remove
		if len(keys) == 0 {
			return row{}, nil, sdk.RecordFault(errors.New("a delete needs a key: set the key parameter or give the record a key"))
		}
	case sdk.OperationUpdate:
		r.class = upsert
	default:
		r.class = create
	}
	if len(keys) == 0 && r.class != remove {
		r.class = insert
	}
	for _, k := range keys {
		if _, ok := key[k]; !ok {
			if _, ok := values[k]; !ok {
				return row{}, nil, sdk.RecordFault(fmt.Errorf("key column %q has no value in the record's key or payload", k))
			}
		}
	}
	if r.class == remove {
		r.columns = keys
	} else {
		r.columns = sortedKeys(values, keys, last.columns)
	}
	t, missing, err := d.missingColumns(ctx, t, r.columns, batch)
	if err != nil {
		return row{}, nil, err
	}
	r.table = t
	if d.cfg.Auto.Evolve {
		if change, err := d.typesFor(ctx, t.name, rec.Metadata); change != nil || err != nil {
			return row{}, change, err
		}
	}
	if d.cfg.Auto.Evolve && (len(missing) > 0 || (hasMeta && !t.hints.fits(meta))) {
		change, err := d.evolve(ctx, t, described, missing, key, values)
		if change != nil || err != nil {
			return row{}, change, err
		}
		d.declare(t, described)
		t.hints.fit(meta)
	}
	if len(missing) > 0 {
		return row{}, nil, sdk.RecordFault(fmt.Errorf("column %q does not exist in table %s (as the catalog says in this batch)", missing[0], t.name))
	}
	return row{position: rec.Position, key: key, values: values}, nil, nil
}

// decodedColumns is a postgres.columns and the columns it decodes to,
// which are never changed once decoded.
type decodedColumns struct {
	meta    string
	columns []pg.Column
}

// columnsOf decodes a record's postgres.columns, the last one decoded
// again without decoding it: consecutive records of a table share it, and
// so do the Writes in flight, which may each replace it.
func (d *Destination) columnsOf(meta string) ([]pg.Column, error) {
	if last := d.lastColumns.Load(); last != nil && last.meta == meta {
		return last.columns, nil
	}
	cols, err := pg.DecodeColumns(meta)
	if err != nil {
		return nil, err
	}
	d.lastColumns.Store(&decodedColumns{meta, cols})
	return cols, nil
}

// declare notes the types the records gave t's columns, which a later
// change of type at the source is followed from.
func (d *Destination) declare(t *table, cols []pg.Column) {
	if len(cols) == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.declared[t.name] == nil {
		d.declared[t.name] = map[string]string{}
	}
	for _, c := range cols {
		if !d.lockedChangedFrom(t, c.Name, c.Type) { // a record older than the change
			d.declared[t.name][c.Name] = c.Type
		}
	}
}

// declaredType returns the type the records last gave column col of t.
func (d *Destination) declaredType(t *table, col string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	typ, ok := d.declared[t.name][col]
	return typ, ok
}

// sortedKeys returns the union of m's keys and extra, sorted: like when
// that is the same set, which saves sorting for every record of a run.
func sortedKeys(m map[string]any, extra []string, like []string) []string {
	n := len(m)
	for _, k := range extra {
		if _, ok := m[k]; !ok {
			n++
		}
	}
	if n == len(like) {
		same := true
		for _, k := range like {
			if _, ok := m[k]; !ok && !slices.Contains(extra, k) {
				same = false
				break
			}
		}
		if same {
			return like
		}
	}
	out := slices.AppendSeq(make([]string, 0, n), maps.Keys(m))
	for _, k := range extra {
		if _, ok := m[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// fields returns structured data, or raw data holding a JSON object, as a
// map. Other raw data is an error; no data is an empty map. what is where
// the data is in the record ("key", "payload.after"), which an error names.
func fields(what string, data sdk.Data) (map[string]any, error) {
	f, err := sdk.FieldsOf(data)
	var text *sdk.InvalidUTF8Error
	switch {
	case errors.As(err, &text):
		return nil, &sdk.InvalidUTF8Error{Field: what + "." + text.Field, Name: text.Name}
	case err != nil:
		return nil, fmt.Errorf("the %s: %w", what, err)
	}
	return f, nil
}

// runError is a run that failed at the record at index (within the run).
type runError struct {
	index int
	err   error
}

// writeRun writes a run; if a record's value cannot be rendered for its
// column, the records before it, and the error names it.
func (d *Destination) writeRun(ctx context.Context, r *run) *runError {
	cols, bad := r.render()
	if len(r.rows) == 0 {
		return bad
	}
	if err := d.writeRows(ctx, r, cols); err != nil {
		return err
	}
	return bad
}

// writeRows writes the rendered rows of a run with one statement, or, if
// that fails, as much of the run as it can before the failure.
func (d *Destination) writeRows(ctx context.Context, r *run, cols textColumns) *runError {
	all := len(r.rows)
	if r.class == create && r.table.hints.tryInsert() {
		err := d.exec(ctx, r, insert, cols, 0, all)
		if err == nil {
			r.table.hints.inserted(true)
			return nil
		}
		if !isUniqueViolation(err) {
			return d.runFailed(ctx, r, cols, 0, all, err)
		}
		r.table.hints.inserted(false)
	}
	if err := d.exec(ctx, r, r.class, cols, 0, all); err != nil {
		return d.runFailed(ctx, r, cols, 0, all, err)
	}
	return nil
}

// exec writes the run's rows[lo:hi] with one statement of class c: from
// [copyMin] rows on through COPY (see [Destination.copyRows]), else, or if
// COPY fails where a statement may not, with the rows' values as
// parameters.
func (d *Destination) exec(ctx context.Context, r *run, c class, cols textColumns, lo, hi int) error {
	keep := r.dedupe(cols, lo, hi)
	n := hi - lo
	if keep != nil {
		n = len(keep)
	}
	if n >= copyMin && !r.table.hints.noCopy.Load() {
		err := d.copyRows(ctx, r, c, cols, keep, lo, hi)
		if err == nil {
			d.metrics.written(c, "copy", hi-lo)
		}
		if err == nil || isDataError(err) || pg.Retryable(err) {
			return err
		}
		// Not a failure the statements would have: COPY or the staging
		// table may be what the table or the user does not allow (a
		// privilege on temporary tables, say). The statements decide.
		r.table.hints.noCopy.Store(true)
	}
	var args []any
	from := arrays
	switch {
	case n == 1 && keep != nil:
		args, from = cols.row(keep[0]), oneRow
	case n == 1:
		args, from = cols.row(lo), oneRow
	default:
		args = cols.args(keep, lo, hi)
	}
	sql := r.statement(c, from)
	var err error
	if d.written != nil {
		err = d.written.exec(ctx, d.pool, sql, args, positionsOf(r.rows[lo:hi]))
	} else {
		_, err = d.pool.Exec(ctx, sql, args...)
	}
	if err == nil {
		d.metrics.written(c, "statement", hi-lo)
	}
	return err
}

// runFailed finds out what of the run's rows[lo:hi], which failed to
// write as one statement with err, it can write before the failure, and
// whose failure that is. The rows before lo are written.
//
// If the database rejected the statement for its data (a value or a
// constraint), the rows are bisected: each half written on its own (and
// committed when it succeeds), the half that fails bisected again, until
// the one record at fault is found: about 2·log2(len) statements for one
// bad record, which is then the failure of that record alone. Any other
// failure is the failure of the first record not written, and its error
// says whether the records from it on may be retried.
func (d *Destination) runFailed(ctx context.Context, r *run, cols textColumns, lo, hi int, err error) *runError {
	for {
		switch {
		case ctx.Err() != nil:
			return &runError{lo, fmt.Errorf("record at position %q: table %s: %w", r.rows[lo].position, r.table.name, ctx.Err())}
		case !isDataError(err):
			return &runError{lo, d.systemError(r, lo, err)}
		case hi-lo == 1:
			return &runError{lo, sdk.RecordFault(d.describe(ctx, r, cols, lo, err))}
		}
		mid := lo + (hi-lo)/2
		if e := d.exec(ctx, r, r.class, cols, lo, mid); e != nil {
			hi, err = mid, e
			continue
		}
		lo = mid
		if e := d.exec(ctx, r, r.class, cols, lo, hi); e != nil {
			err = e
			continue
		}
		if hi == len(r.rows) {
			return nil
		}
		// The rows hi was narrowed from, which a failure ahead of them
		// had kept back, are still to write.
		lo, hi = hi, len(r.rows)
		if err = d.exec(ctx, r, r.class, cols, lo, hi); err == nil {
			return nil
		}
	}
}

// systemError is err, a failure that is not the data's, for the run's
// record i and those after it: marked retryable when the database may be
// asked again (see [retryable]). A plain insert that may have committed
// is retried only in the exactly-once mode, which finds out whether it did.
func (d *Destination) systemError(r *run, i int, err error) error {
	e := fmt.Errorf("record at position %q: table %s: %s", r.rows[i].position, r.table.name, pg.Reason(err, d.cfg.URL))
	switch {
	case pg.Retryable(err) && (r.class != insert || !pg.MayHaveCommitted(err) || d.written != nil):
		return sdk.Retryable(e)
	case pg.Retryable(err):
		return fmt.Errorf("%w (the connection broke after the statement was sent, so its rows may or may not be written; a plain insert is not retried, since it could write them twice)", e)
	}
	return e
}

// describe is the error of the run's record i, which the database
// rejected alone with err: its position, the table, and, when the error
// is about one of its values, the column and the column's type, then the
// database's reason. The database names the column of a NOT NULL
// violation; for a value it rejected, each of the record's values is
// checked on its own, as the statement would take it, to find the one.
func (d *Destination) describe(ctx context.Context, r *run, cols textColumns, i int, err error) error {
	prefix := fmt.Sprintf("record at position %q: table %s", r.rows[i].position, r.table.name)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return fmt.Errorf("%s: %s", prefix, pg.Message(err))
	}
	col := pgErr.ColumnName
	if col == "" && strings.HasPrefix(pgErr.Code, "22") {
		col = d.badColumn(ctx, r, cols, i)
	}
	if col == "" {
		return fmt.Errorf("%s: %s", prefix, pg.Message(err))
	}
	return fmt.Errorf("%s: column %q (%s): %s", prefix, col, r.table.types[col], pg.Message(err))
}

// badColumn returns the column whose value in the run's row i the
// database does not take, or "" if it finds none: a value it cannot read
// as the column's type, or one that does not fit the column's modifier
// (an explicit cast to the column's type changes it, where assigning it,
// as the statement does, fails).
func (d *Destination) badColumn(ctx context.Context, r *run, cols textColumns, i int) string {
	for c, col := range r.columns {
		if cols.null[c][i] {
			continue
		}
		base, typ := r.table.bases[col], r.table.types[col]
		sql := "SELECT $1::text::" + base + " IS NULL"
		if base != typ {
			sql = "SELECT ($1::text::" + base + ")::" + typ + "::text IS DISTINCT FROM $1::text::" + base + "::text"
		}
		var changed bool
		if err := d.pool.QueryRow(ctx, sql, cols.values[c][i]).Scan(&changed); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) {
				return col
			}
			return "" // the database did not answer
		}
		if changed {
			return col
		}
	}
	return ""
}

// textColumns are a run's values in PostgreSQL's text format, one slice
// per column.
type textColumns struct {
	values [][]string
	null   [][]bool
}

// render renders the run's values for their columns. A value that cannot
// be written to its column ends the run before its record: the columns
// hold the rows before it, and the error names it and its column.
//
// A column's values other than strings are appended to one buffer and
// sliced out of one string made of it: an allocation per column, not per
// value.
func (r *run) render() (textColumns, *runError) {
	cols := textColumns{values: make([][]string, len(r.columns)), null: make([][]bool, len(r.columns))}
	var bad *runError
	n := len(r.rows)            // the rows every column has rendered
	ends := make([]int, n)      // where each value ends in buf; -1: a string, not in buf
	buf := make([]byte, 0, 256) // the column's values that are not strings
	for c, col := range r.columns {
		isKey := slices.Contains(r.keys, col)
		k := kindOf(r.table.types[col])
		values, null := make([]string, n), make([]bool, n)
		buf = buf[:0]
		for i, rw := range r.rows[:n] {
			v := rw.get(col, isKey)
			if s, ok := v.(string); ok && utf8.ValidString(s) {
				values[i], ends[i] = s, -1
				continue
			}
			var err error
			if buf, null[i], err = appendText(buf, v, k); err != nil {
				n = i
				bad = &runError{i, sdk.RecordFault(fmt.Errorf("record at position %q: table %s: column %q (%s): %w", rw.position, r.table.name, col, r.table.types[col], err))}
				break
			}
			ends[i] = len(buf)
		}
		if len(buf) > 0 {
			all, start := string(buf), 0
			for i, end := range ends[:n] {
				if end >= 0 {
					values[i], start = all[start:end], end
				}
			}
		}
		cols.values[c], cols.null[c] = values, null
	}
	if bad != nil {
		r.rows = r.rows[:n]
		for c := range cols.values {
			cols.values[c], cols.null[c] = cols.values[c][:n], cols.null[c][:n]
		}
	}
	return cols, bad
}

// dedupe returns the rows of rows[lo:hi] to write, for each key the
// last: one statement cannot touch a row twice, and the last record's
// values are what the ordered stream means. nil means every row.
func (r *run) dedupe(cols textColumns, lo, hi int) []int {
	if r.class == insert || hi-lo < 2 {
		return nil
	}
	var keyCols []int
	for c, col := range r.columns {
		if slices.Contains(r.keys, col) {
			keyCols = append(keyCols, c)
		}
	}
	// keyOf is row i's key, unambiguous across columns; a key with a NULL
	// matches no other, so such rows are all kept.
	keyOf := func(i int) (string, bool) {
		for _, c := range keyCols {
			if cols.null[c][i] {
				return "", false
			}
		}
		if len(keyCols) == 1 {
			return cols.values[keyCols[0]][i], true
		}
		var b strings.Builder
		for _, c := range keyCols {
			v := cols.values[c][i]
			b.WriteString(strconv.Itoa(len(v)))
			b.WriteByte(':')
			b.WriteString(v)
		}
		return b.String(), true
	}
	last := make(map[string]int, hi-lo)
	for i := lo; i < hi; i++ {
		if k, ok := keyOf(i); ok {
			last[k] = i
		}
	}
	if len(last) == hi-lo {
		return nil
	}
	keep := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		if k, ok := keyOf(i); !ok || last[k] == i {
			keep = append(keep, i)
		}
	}
	if len(keep) == hi-lo {
		return nil
	}
	return keep
}

// args are the statement's arguments for the rows at indexes rows (nil:
// rows lo to hi): one text array per column.
func (cols textColumns) args(rows []int, lo, hi int) []any {
	args := make([]any, len(cols.values))
	for c := range cols.values {
		if rows != nil {
			args[c] = textArray{cols.values[c], cols.null[c], rows}
		} else {
			args[c] = textArray{cols.values[c][lo:hi], cols.null[c][lo:hi], nil}
		}
	}
	return args
}

// row are the arguments of the single-row statement for row i: a *string
// per column, nil for NULL.
func (cols textColumns) row(i int) []any {
	args := make([]any, len(cols.values))
	for c := range cols.values {
		if !cols.null[c][i] {
			args[c] = &cols.values[c][i]
		}
	}
	return args
}

// textArray is a text[] parameter holding values[rows[i]] (values[i] when
// rows is nil), NULL where null is set. It hands pgx pointers to its
// elements, so that encoding it allocates nothing per element.
type textArray struct {
	values []string
	null   []bool
	rows   []int
}

func (a textArray) Dimensions() []pgtype.ArrayDimension {
	n := len(a.values)
	if a.rows != nil {
		n = len(a.rows)
	}
	return []pgtype.ArrayDimension{{Length: int32(n), LowerBound: 1}}
}

func (a textArray) Index(i int) any {
	if a.rows != nil {
		i = a.rows[i]
	}
	if a.null[i] {
		return nil
	}
	return &a.values[i]
}

func (a textArray) IndexType() any { return new(string) }

// rowSource is where a statement takes its rows from.
type rowSource int

const (
	oneRow rowSource = iota // a text parameter per column
	arrays                  // a text[] parameter per column
	staged                  // the staging table of text columns (see [stagingTable])
)

// statement returns the SQL writing the run's rows as class c, from
// text values (see [rowSource]); each is cast in SQL to its column's type
// without the modifier (varchar for varchar(10), numeric for
// numeric(6,2)), and then assigned to the column, which checks the
// modifier: a value too long for varchar(n) or char(n), or a bit string of
// the wrong length, fails as assigning it would, where an explicit cast to
// the column's type would cut or pad it. A delete compares the unmodified
// value, so a key too long for its column matches no row rather than the
// row it would be cut to. It depends only on the table, the class, the
// columns and the source, never on the values, so the prepared statement
// cache serves every batch of the same shape. One row through VALUES costs
// the database less than through unnest.
func (r *run) statement(c class, from rowSource) string {
	values := make([]string, len(r.columns)) // each column's value, cast
	var rows string                          // where they come from, for several rows
	if from == oneRow {
		for i, col := range r.columns {
			values[i] = "$" + strconv.Itoa(i+1) + "::text::" + r.table.bases[col]
		}
	} else {
		params := make([]string, len(r.columns))
		aliases := make([]string, len(r.columns))
		for i, col := range r.columns {
			params[i] = "$" + strconv.Itoa(i+1) + "::text[]"
			aliases[i] = "v" + strconv.Itoa(i+1)
			values[i] = "s." + aliases[i] + "::" + r.table.bases[col]
		}
		rows = "unnest(" + strings.Join(params, ", ") + ") AS s(" + strings.Join(aliases, ", ") + ")"
		if from == staged {
			rows = stagingTable(len(r.columns)) + " AS s" // its columns are v1 to vn
		}
	}
	var b strings.Builder
	if c == remove {
		b.WriteString("DELETE FROM " + r.table.ident + " AS t")
		if from != oneRow {
			b.WriteString(" USING " + rows)
		}
		b.WriteString(" WHERE ")
		for i, col := range r.columns {
			if i > 0 {
				b.WriteString(" AND ")
			}
			b.WriteString("t." + pg.Quote(col) + " = " + values[i])
		}
		return b.String()
	}
	b.WriteString("INSERT INTO " + r.table.ident + " (" + r.columnList() + ")")
	if from == oneRow {
		b.WriteString(" VALUES (" + strings.Join(values, ", ") + ")")
	} else {
		b.WriteString(" SELECT " + strings.Join(values, ", ") + " FROM " + rows)
	}
	if c == upsert || c == create {
		keys := make([]string, len(r.keys))
		for i, k := range r.keys {
			keys[i] = pg.Quote(k)
		}
		var set []string
		for _, col := range r.columns {
			if !slices.Contains(r.keys, col) {
				set = append(set, pg.Quote(col)+" = EXCLUDED."+pg.Quote(col))
			}
		}
		b.WriteString(" ON CONFLICT (" + strings.Join(keys, ", ") + ")")
		if len(set) == 0 {
			b.WriteString(" DO NOTHING")
		} else {
			b.WriteString(" DO UPDATE SET " + strings.Join(set, ", "))
		}
	}
	return b.String()
}
