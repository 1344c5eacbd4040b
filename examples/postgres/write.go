package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// class is what a statement does with its rows.
type class int

const (
	upsert class = iota // create, snapshot, update with a key
	insert              // create, snapshot, update without a key
	remove              // delete
)

// row is one record's values by column.
type row struct {
	position sdk.Position
	values   map[string]any
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
// cover the records before it and the error names it.
func (d *Destination) plan(ctx context.Context, records []sdk.Record) ([]*run, int, error) {
	var runs []*run
	prev := &run{}
	for i, rec := range records {
		r, err := d.planRecord(ctx, rec, prev)
		if err != nil {
			return runs, i, fmt.Errorf("record at position %q: %w", rec.Position, err)
		}
		if n := len(runs); n > 0 && runs[n-1].same(r) {
			runs[n-1].rows = append(runs[n-1].rows, r.rows...)
			continue
		}
		r.start = i
		runs = append(runs, r)
		prev = r
	}
	return runs, len(records), nil
}

// planRecord makes a run of one record. prev is the run before it, whose
// key and column lists it shares when it can.
func (d *Destination) planRecord(ctx context.Context, rec sdk.Record, prev *run) (*run, error) {
	name := d.cfg.Table
	if name == "" {
		c, err := rec.Metadata.GetCollection()
		if err != nil || c == "" {
			return nil, errors.New("no table: set the table parameter or the record's opencdc.collection metadata")
		}
		name = c
	}
	t, err := d.table(ctx, name)
	if err != nil {
		return nil, err
	}
	key, err := fields("key", rec.Key)
	if raw, ok := rec.Key.(sdk.RawData); err != nil && ok && len(d.cfg.Key) == 1 {
		key, err = map[string]any{d.cfg.Key[0]: string(raw)}, nil // a plain raw key is the one key column's value
	}
	if err != nil {
		return nil, err
	}
	keys := d.keys
	if len(keys) == 0 {
		keys = sortedKeys(key, prev.keys)
	}
	r := &run{table: t, keys: keys}
	values := map[string]any{}
	switch rec.Operation {
	case sdk.OperationDelete:
		r.class = remove
		if len(keys) == 0 {
			return nil, errors.New("a delete needs a key: set the key parameter or give the record a key")
		}
	default:
		r.class = upsert
		if len(keys) == 0 {
			r.class = insert
		}
		if values, err = fields("payload", rec.Payload.After); err != nil {
			return nil, err
		}
	}
	for _, k := range keys {
		v, ok := key[k]
		if !ok {
			if v, ok = values[k]; !ok {
				return nil, fmt.Errorf("key column %q has no value in the record's key or payload", k)
			}
		}
		values[k] = v
	}
	if r.class == remove {
		r.columns = keys
	} else {
		r.columns = sortedKeys(values, prev.columns)
	}
	for _, c := range r.columns {
		if _, ok := t.types[c]; !ok {
			return nil, fmt.Errorf("column %q does not exist in table %s", c, t.name)
		}
	}
	r.rows = []row{{position: rec.Position, values: values}}
	return r, nil
}

// sortedKeys returns m's keys, sorted: like is when they are the same set,
// which saves sorting for every record of a run.
func sortedKeys(m map[string]any, like []string) []string {
	if len(m) == len(like) {
		same := true
		for _, k := range like {
			if _, ok := m[k]; !ok {
				same = false
				break
			}
		}
		if same {
			return like
		}
	}
	return slices.Sorted(maps.Keys(m))
}

// fields returns structured data, or raw data holding a JSON object, as a
// map. Other raw data is an error; no data is an empty map.
func fields(what string, data sdk.Data) (map[string]any, error) {
	switch v := data.(type) {
	case nil:
		return map[string]any{}, nil
	case sdk.StructuredData:
		return v, nil
	case sdk.RawData:
		if len(v) == 0 {
			return map[string]any{}, nil
		}
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(string(v)))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("the %s is raw data but not a JSON object: %w", what, err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("the %s has unsupported data type %T", what, data)
}

// runError is a run that failed at the record at index (within the run).
type runError struct {
	index int
	err   error
}

// writeRun writes a run with one statement. A statement that fails because
// the connection broke is tried once more. Otherwise, to find the record at
// fault, the run's records are written one at a time, in order, and the
// first that fails ends the run.
func (d *Destination) writeRun(ctx context.Context, r *run) *runError {
	sql, args := r.statement(dedupe(r))
	_, err := d.pool.Exec(ctx, sql, args...)
	if err != nil && isConnectionLoss(err) && ctx.Err() == nil {
		_, err = d.pool.Exec(ctx, sql, args...)
	}
	if err == nil {
		return nil
	}
	if isConnectionLoss(err) || ctx.Err() != nil {
		return &runError{0, fmt.Errorf("record at position %q: table %s: %s", r.rows[0].position, r.table.name, redact(err, d.cfg.URL))}
	}
	for i := range r.rows {
		sql, args := r.statement(r.rows[i : i+1])
		if _, err := d.pool.Exec(ctx, sql, args...); err != nil {
			return &runError{i, fmt.Errorf("record at position %q: table %s: %s", r.rows[i].position, r.table.name, message(err))}
		}
	}
	return nil
}

// dedupe keeps, for each key, the last row: one statement cannot touch a
// row twice, and the last record's values are what the ordered stream
// means. Rows without a key are all kept.
func dedupe(r *run) []row {
	if r.class == insert || len(r.rows) < 2 {
		return r.rows
	}
	last := make(map[string]int, len(r.rows))
	for i, row := range r.rows {
		last[keyOf(r.keys, row)] = i
	}
	if len(last) == len(r.rows) {
		return r.rows
	}
	out := make([]row, 0, len(last))
	for i, row := range r.rows {
		if last[keyOf(r.keys, row)] == i {
			out = append(out, row)
		}
	}
	return out
}

func keyOf(keys []string, r row) string {
	var b strings.Builder
	for _, k := range keys {
		s, null := text(r.values[k])
		if null {
			b.WriteString("\x00n")
		} else {
			b.WriteString(strconv.Quote(s))
		}
		b.WriteByte(0)
	}
	return b.String()
}

// statement returns the SQL and arguments writing rows: one text array per
// column, cast to the column's type in SQL. The SQL depends only on the
// table, the class and the columns, never on the rows, so the prepared
// statement cache serves every batch of the same shape.
func (r *run) statement(rows []row) (string, []any) {
	args := make([]any, len(r.columns))
	for c, col := range r.columns {
		vals := make([]pgtype.Text, len(rows))
		for i, row := range rows {
			s, null := text(row.values[col])
			vals[i] = pgtype.Text{String: s, Valid: !null}
		}
		args[c] = vals
	}
	var b strings.Builder
	params := make([]string, len(r.columns))
	aliases := make([]string, len(r.columns))
	casts := make([]string, len(r.columns))
	for c, col := range r.columns {
		params[c] = "$" + strconv.Itoa(c+1) + "::text[]"
		aliases[c] = "v" + strconv.Itoa(c+1)
		casts[c] = aliases[c] + "::" + r.table.types[col]
	}
	source := "unnest(" + strings.Join(params, ", ") + ") AS s(" + strings.Join(aliases, ", ") + ")"
	if r.class == remove {
		b.WriteString("DELETE FROM " + r.table.ident + " AS t USING " + source + " WHERE ")
		for c, col := range r.columns {
			if c > 0 {
				b.WriteString(" AND ")
			}
			b.WriteString("t." + quote(col) + " = " + casts[c])
		}
		return b.String(), args
	}
	cols := make([]string, len(r.columns))
	for c, col := range r.columns {
		cols[c] = quote(col)
	}
	b.WriteString("INSERT INTO " + r.table.ident + " (" + strings.Join(cols, ", ") + ") SELECT " + strings.Join(casts, ", ") + " FROM " + source)
	if r.class == upsert {
		keys := make([]string, len(r.keys))
		for i, k := range r.keys {
			keys[i] = quote(k)
		}
		var set []string
		for _, col := range r.columns {
			if !slices.Contains(r.keys, col) {
				set = append(set, quote(col)+" = EXCLUDED."+quote(col))
			}
		}
		b.WriteString(" ON CONFLICT (" + strings.Join(keys, ", ") + ")")
		if len(set) == 0 {
			b.WriteString(" DO NOTHING")
		} else {
			b.WriteString(" DO UPDATE SET " + strings.Join(set, ", "))
		}
	}
	return b.String(), args
}

func quote(name string) string { return pgx.Identifier{name}.Sanitize() }

// text renders a value in PostgreSQL's text input format.
func text(v any) (s string, null bool) {
	switch v := v.(type) {
	case nil:
		return "", true
	case string:
		return v, false
	case json.Number:
		return v.String(), false
	case bool:
		return strconv.FormatBool(v), false
	case int:
		return strconv.Itoa(v), false
	case int64:
		return strconv.FormatInt(v, 10), false
	case int32:
		return strconv.FormatInt(int64(v), 10), false
	case float64:
		// Structured data crosses the protocol with every number a double:
		// no exponent, so integral values still parse as integers.
		return strconv.FormatFloat(v, 'f', -1, 64), false
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 32), false
	case time.Time:
		return v.Format(time.RFC3339Nano), false
	case []byte:
		return `\x` + fmt.Sprintf("%x", v), false
	default:
		b, err := json.Marshal(v) // maps and lists, for json and jsonb columns
		if err != nil {
			return fmt.Sprint(v), false
		}
		return string(b), false
	}
}

// message is the database's reason for err, with its detail.
func message(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		msg := pgErr.Message
		if pgErr.Detail != "" {
			msg += " (" + pgErr.Detail + ")"
		}
		return msg + " [SQLSTATE " + pgErr.Code + "]"
	}
	return err.Error()
}
