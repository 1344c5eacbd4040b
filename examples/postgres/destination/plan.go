package destination

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
)

// class is what a statement does with its rows.
type class int

const (
	upsert    class = iota // update with a key
	create                 // create, snapshot with a key: an upsert, tried as a plain insert first
	insert                 // create, snapshot, update without a key or an old row
	remove                 // delete with a key
	updateOne              // update without a key, with the old row: changes one row equal to it
	deleteOne              // delete without a key, with the old row: deletes one row equal to it
)

// row is one record's values: key columns come from its key when the key
// has them, every other column from its payload; before is the old row
// that a record without a key changes or deletes.
type row struct {
	position sdk.Position
	key      map[string]any
	values   map[string]any
	before   map[string]any
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
	match   []string // the old row's columns, which find the row (updateOne, deleteOne), sorted
	rows    []row
}

func (r *run) same(o *run) bool {
	return r.table == o.table && r.class == o.class && slices.Equal(r.keys, o.keys) && slices.Equal(r.columns, o.columns) && slices.Equal(r.match, o.match)
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

// recordData is what planning takes from a record: the name of its
// table, its key and values, and its postgres.columns (described, decoded
// when auto.create or auto.evolve may need it).
type recordData struct {
	table       string
	key, values map[string]any
	before      map[string]any // the old row, read for an update or delete without a key
	meta        string
	hasMeta     bool
	described   []pg.Column
}

// recordData reads what planning takes from rec; what is wrong with it is
// the record's fault.
func (d *Destination) recordData(rec sdk.Record) (recordData, error) {
	name, err := d.tableOf(rec)
	if err != nil {
		return recordData{}, err
	}
	key, err := fields("key", rec.Key)
	if raw, ok := rec.Key.(sdk.RawData); err != nil && ok && len(d.cfg.Key) == 1 {
		key, err = map[string]any{d.cfg.Key[0]: string(raw)}, nil // a plain raw key is the one key column's value
	}
	if err != nil {
		return recordData{}, err
	}
	var values map[string]any
	if rec.Operation != sdk.OperationDelete {
		if values, err = fields("payload.after", rec.Payload.After); err != nil {
			return recordData{}, err
		}
	}
	in := recordData{table: name, key: key, values: values}
	if len(d.cfg.Key) == 0 && len(key) == 0 && (rec.Operation == sdk.OperationUpdate || rec.Operation == sdk.OperationDelete) {
		if in.before, err = fields("payload.before", rec.Payload.Before); err != nil {
			return recordData{}, err
		}
	}
	in.meta, in.hasMeta = rec.Metadata[pg.ColumnsKey]
	if in.hasMeta && (d.cfg.Auto.Create || d.cfg.Auto.Evolve) {
		if in.described, err = d.lastColumns.decode(in.meta, pg.DecodeColumns); err != nil {
			return recordData{}, err
		}
	}
	return in, nil
}

// planRecord fills in r's table, class, keys and columns for rec, planned
// in batch, and returns its row, or the change its table needs first
// (auto.create, auto.evolve). last is the run before it, whose key and
// column lists it shares when it can. What is wrong with the record itself
// (its data, its table when its metadata names it) is its fault.
func (d *Destination) planRecord(ctx context.Context, rec sdk.Record, batch uint64, last, r *run) (row, *schemaChange, error) {
	in, err := d.recordData(rec)
	if err != nil {
		return row{}, nil, sdk.RecordFault(err)
	}
	t, err := d.table(ctx, in.table, batch)
	var noTable errNoTable
	if errors.As(err, &noTable) && d.cfg.Auto.Create {
		if change, err := d.typesFor(ctx, in.table, rec.Metadata); change != nil || err != nil {
			return row{}, change, err
		}
		values := in.values
		if values == nil {
			values = in.before // a delete without a key: the old row's columns
		}
		change, err := d.createFor(ctx, in.table, in.described, in.key, values)
		return row{}, change, err
	}
	if err != nil {
		if (d.cfg.Table == "" || strings.Contains(d.cfg.Table, "{{")) && !sdk.IsRetryable(err) {
			err = sdk.RecordFault(err) // the table the record names
		}
		return row{}, nil, err
	}
	if in.described != nil {
		in.key, in.values = d.renamed(t, in.described, in.key, in.values)
		in.before, _ = d.renamed(t, in.described, in.before, nil)
	}
	if err := d.shape(rec.Operation, in, t, last, r); err != nil {
		return row{}, nil, err
	}
	if change, err := d.fitTable(ctx, rec.Metadata, in, r, batch); change != nil || err != nil {
		return row{}, change, err
	}
	return row{position: rec.Position, key: in.key, values: in.values, before: in.before}, nil, nil
}

// shape sets r's table, keys, class and columns for a record of
// operation op with in's key and values, to be written to t.
func (d *Destination) shape(op sdk.Operation, in recordData, t *table, last, r *run) error {
	keys := d.keys
	if len(keys) == 0 {
		keys = sortedKeys(in.key, nil, last.keys)
	}
	*r = run{table: t, keys: keys}
	switch op {
	case sdk.OperationDelete:
		r.class = remove
	case sdk.OperationUpdate:
		r.class = upsert
	default:
		r.class = create
	}
	if len(keys) == 0 {
		if err := r.keyless(in.before, last); err != nil {
			return err
		}
	}
	for _, k := range keys {
		if _, ok := in.key[k]; !ok {
			if _, ok := in.values[k]; !ok {
				return sdk.RecordFault(fmt.Errorf("key column %q has no value in the record's key or payload", k))
			}
		}
	}
	switch r.class {
	case remove:
		r.columns = keys
	case deleteOne:
		r.columns = nil // the old row finds the row
	case updateOne:
		if r.columns = sortedKeys(in.values, nil, last.columns); len(r.columns) == 0 {
			return sdk.RecordFault(errors.New("an update without a key needs the new row in payload.after"))
		}
	default:
		r.columns = sortedKeys(in.values, keys, last.columns)
	}
	return nil
}

// fitTable finds whether r's table has its columns, as a description read at
// most once per batch says, and returns the change it needs first
// (auto.evolve), if any; a column it lacks is else the record's fault.
func (d *Destination) fitTable(ctx context.Context, md sdk.Metadata, in recordData, r *run, batch uint64) (*schemaChange, error) {
	t, missing, err := d.missingColumns(ctx, r.table, r.named(), batch)
	if err != nil {
		return nil, err
	}
	r.table = t
	if d.cfg.Auto.Evolve {
		if change, err := d.typesFor(ctx, t.name, md); change != nil || err != nil {
			return change, err
		}
	}
	if d.cfg.Auto.Evolve && (len(missing) > 0 || (in.hasMeta && !t.hints.fits(in.meta))) {
		change, err := d.evolve(ctx, t, in.described, missing, in.key, in.values)
		if change != nil || err != nil {
			return change, err
		}
		d.declare(t, in.described)
		t.hints.fit(in.meta)
	}
	if len(missing) > 0 {
		return nil, sdk.RecordFault(fmt.Errorf("column %q does not exist in table %s (as the catalog says in this batch)", missing[0], t.name))
	}
	return nil, nil
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
