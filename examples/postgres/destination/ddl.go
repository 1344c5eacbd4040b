package destination

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// schemaChange is what a table needs before a record can be written to
// it: statements run in one transaction, in order.
type schemaChange struct {
	table string // as the records name it
	after uint64 // the changes the destination had made when this one was planned
	stmts []string
	kinds []string // each statement's kind, for the metrics: create, add_column, rename_column, alter_type, create_type, add_value
	// columns are the renames and changes of type, which the destination
	// remembers (see [columnHistory]).
	columns []columnChange
}

func (c *schemaChange) add(kind, stmt string) {
	c.stmts = append(c.stmts, stmt)
	c.kinds = append(c.kinds, kind)
}

// createFor returns the table a record needs when the table called name
// does not exist: its columns, types, NOT NULL and primary key from the
// record's postgres.columns when it has them, else from its key and
// values (see [typeOf]).
func (d *Destination) createFor(ctx context.Context, name string, cols []pg.Column, key, values map[string]any) (*schemaChange, error) {
	parts, err := pg.SplitName(name)
	if err != nil {
		return nil, err
	}
	if cols == nil {
		cols = columnsOf(d.keys, key, values)
	}
	var defs, pk []string
	keyed := slices.ContainsFunc(cols, func(c pg.Column) bool { return c.Key > 0 })
	for _, c := range cols {
		typ, err := d.checkType(ctx, name, c)
		if err != nil {
			return nil, err
		}
		def := pg.Quote(c.Name) + " " + typ
		if c.Default != "" {
			def += " DEFAULT " + c.Default
		}
		if c.NotNull {
			def += " NOT NULL"
		}
		defs = append(defs, def)
	}
	if keyed {
		byPlace := slices.Clone(cols)
		slices.SortFunc(byPlace, func(a, b pg.Column) int { return a.Key - b.Key })
		for _, c := range byPlace {
			if c.Key > 0 {
				pk = append(pk, pg.Quote(c.Name))
			}
		}
		defs = append(defs, "PRIMARY KEY ("+strings.Join(pk, ", ")+")")
	}
	c := &schemaChange{table: name}
	c.add("create", "CREATE TABLE IF NOT EXISTS "+pgx.Identifier(parts).Sanitize()+" ("+strings.Join(defs, ", ")+")")
	return c, nil
}

// columnsOf describes the columns of a record that carries no
// postgres.columns: the key's (the configured key columns, else the
// record's key fields, in name order) then the payload's, in name order,
// each typed by its value.
func columnsOf(configured []string, key, values map[string]any) []pg.Column {
	keys := configured
	if len(keys) == 0 {
		keys = sortedKeys(key, nil, nil)
	}
	var cols []pg.Column
	for i, k := range keys {
		v, ok := key[k]
		if !ok {
			v = values[k]
		}
		cols = append(cols, pg.Column{Name: k, Type: typeOf(v), NotNull: true, Key: i + 1})
	}
	for _, name := range sortedKeys(values, nil, nil) {
		if !slices.Contains(keys, name) {
			cols = append(cols, pg.Column{Name: name, Type: typeOf(values[name])})
		}
	}
	return cols
}

// typeOf is the column type for a value of a record that does not say
// its columns' types: what the value's Go type holds exactly. Values
// decoded with a schema (Avro, from the schema service) have the schema's
// types; with schemas off, the protocol carries every number as a double.
func typeOf(v any) string {
	switch v.(type) {
	case bool:
		return "boolean"
	case int8, int16, int32, uint8, uint16:
		return "integer"
	case int, int64, uint32:
		return "bigint"
	case uint, uint64, *big.Int:
		return "numeric"
	case float32:
		return "real"
	case float64:
		return "double precision"
	case *big.Rat, json.Number:
		return "numeric"
	case []byte:
		return "bytea"
	case time.Time:
		return "timestamp with time zone"
	case time.Duration:
		return "interval"
	case map[string]any, sdk.StructuredData, []any:
		return "jsonb"
	}
	return "text" // strings, and NULL, which says nothing of its type
}

// typeText matches what format_type writes, and nothing that could end
// the statement it goes into: names (double-quoted, with "" inside),
// dots, spaces, modifiers of numbers and array brackets.
var typeText = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_$]*|"(?:[^"]|"")+"|[. ]|\(\d+(?:,\d+)?\)|\[\])+$`)

// checkType returns c's type, checked to be a type the destination
// database has.
func (d *Destination) checkType(ctx context.Context, table string, c pg.Column) (string, error) {
	if !typeText.MatchString(c.Type) {
		return "", fmt.Errorf("table %s: column %q: %q is not a type name", table, c.Name, c.Type)
	}
	var exists bool
	if err := d.pool.QueryRow(ctx, `SELECT to_regtype($1) IS NOT NULL`, c.Type).Scan(&exists); err != nil {
		return "", d.catalogError("look up the type of column "+strconv.Quote(c.Name)+" of table", table, err)
	}
	if !exists {
		return "", fmt.Errorf("table %s: column %q has type %s, which the destination database does not have: create it there as it is at the source (an enum, a domain or a composite type: CREATE TYPE …; an extension's: CREATE EXTENSION …), or create the table yourself", table, c.Name, c.Type)
	}
	return c.Type, nil
}

// evolve returns what table t needs to take a record with columns (the
// record's, sorted) and, when it has them, its postgres.columns cols: a
// column renamed at the source is renamed, a missing one added (with its
// type, or its value's type), and a column whose type the source widened
// or changed gets the new type. nil: nothing. missing are the columns t
// lacks, as [Destination.missingColumns] found them.
func (d *Destination) evolve(ctx context.Context, t *table, cols []pg.Column, missing []string, key, values map[string]any) (*schemaChange, error) {
	c := &schemaChange{table: t.name}
	described := map[string]pg.Column{}
	for _, col := range cols {
		described[col.Name] = col
	}
	for _, name := range inSourceOrder(missing, cols) {
		col, ok := described[name]
		if ok && col.Was != "" {
			if _, has := t.types[col.Was]; has {
				c.add("rename_column", "ALTER TABLE "+t.ident+" RENAME COLUMN "+pg.Quote(col.Was)+" TO "+pg.Quote(name))
				c.columns = append(c.columns, columnChange{column: name, was: col.Was})
				continue
			}
		}
		if !ok {
			v, inKey := key[name]
			if !inKey {
				v = values[name]
			}
			col = pg.Column{Name: name, Type: typeOf(v)}
		}
		typ, err := d.checkType(ctx, t.name, col)
		if err != nil {
			return nil, err
		}
		// With the source's default, which the rows already there take, as
		// they did at the source (where they are not sent as changes).
		def := ""
		if col.Default != "" {
			def = " DEFAULT " + col.Default
		}
		c.add("add_column", "ALTER TABLE "+t.ident+" ADD COLUMN IF NOT EXISTS "+pg.Quote(name)+" "+typ+def)
	}
	for _, col := range cols {
		have, ok := t.types[col.Name]
		if !ok || have == col.Type || d.changedFrom(t, col.Name, col.Type) {
			continue // the last: the record is older than the change this destination made
		}
		// The source's type for it, as the records said before: a table
		// made by hand with other types keeps them unless they are too
		// narrow.
		if before, seen := d.declaredType(t, col.Name); !(seen && before == have) && !widens(have, col.Type) {
			continue
		}
		typ, err := d.checkType(ctx, t.name, col)
		if err != nil {
			return nil, err
		}
		c.add("alter_type", "ALTER TABLE "+t.ident+" ALTER COLUMN "+pg.Quote(col.Name)+" TYPE "+typ+" USING "+pg.Quote(col.Name)+"::"+typ)
		c.columns = append(c.columns, columnChange{column: col.Name, wasType: have})
	}
	if len(c.stmts) == 0 {
		return nil, nil
	}
	return c, nil
}

// modifier matches a type with a modifier: its name and its numbers.
var modifier = regexp.MustCompile(`^(character varying|character|bit varying|numeric)\((\d+)(?:,(\d+))?\)$`)

// widens reports whether every value of type from fits type to unchanged:
// a longer varchar, char or varbit, varchar or char into text, a numeric
// with as many digits on each side or more, or a wider number.
func widens(from, to string) bool {
	ladders := [][]string{
		{"smallint", "integer", "bigint", "numeric"},
		{"real", "double precision"},
	}
	for _, l := range ladders {
		i, j := slices.Index(l, from), slices.Index(l, to)
		if i >= 0 && j > i {
			return true
		}
	}
	f, t := modifier.FindStringSubmatch(from), modifier.FindStringSubmatch(to)
	switch {
	case f == nil:
		return false
	case f[1] == "character varying" || f[1] == "character":
		if to == "text" || to == "character varying" {
			return true
		}
	case f[1] == "numeric" && to == "numeric":
		return true
	case f[1] == "bit varying" && to == "bit varying":
		return true
	}
	if t == nil || t[1] != f[1] || f[1] == "character" {
		return false // char(n) pads to n: a longer one changes its values
	}
	fn, _ := strconv.Atoi(f[2])
	tn, _ := strconv.Atoi(t[2])
	if f[1] != "numeric" {
		return tn >= fn
	}
	fs, _ := strconv.Atoi(f[3])
	ts, _ := strconv.Atoi(t[3])
	return ts >= fs && tn-ts >= fn-fs
}

// apply makes the change, in one transaction, logging each statement, and
// forgets what it knew of the table, which is read again; made reports
// whether it did. Changes are made one at a time, once no Write is
// between planning records and writing them (see [Destination.schema]).
// If another change was made since c was planned, c is not made: it was
// planned with descriptions that change may have made stale, and it may
// be the very change c is (two Writes whose records need the same column
// plan the same change), so the records are to be planned again.
func (d *Destination) apply(ctx context.Context, c *schemaChange) (made bool, err error) {
	d.schema.Lock()
	defer d.schema.Unlock()
	if d.changes != c.after {
		return false, nil
	}
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return false, d.ddlError(c.table, "", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	for i, stmt := range c.stmts {
		// Through the extended protocol, which takes one statement: the
		// default and check expressions the records carry cannot add any.
		if _, err := tx.Conn().PgConn().ExecParams(ctx, stmt, nil, nil, nil, nil).Close(); err != nil {
			if createdElsewhere(c.kinds[i], err) {
				d.changes++ // the records are planned again, with the type there
				return true, nil
			}
			return false, d.ddlError(c.table, stmt, err)
		}
	}
	err = tx.Commit(ctx)
	// Even a commit that failed may have happened (the connection broke
	// after it was sent): the table's description is read again.
	d.changes++
	d.mu.Lock()
	delete(d.tables, c.table)
	d.mu.Unlock()
	if err != nil {
		return false, d.ddlError(c.table, "", err)
	}
	for i, stmt := range c.stmts {
		sdk.Logger(ctx).Info("postgres: " + stmt)
		d.metrics.schemaChanges.Add(1, c.kinds[i])
	}
	d.remember(c.table, c.columns)
	return true, nil
}

// ddlError is err, from changing table as stmt does: what privilege a
// role that lacks one needs, retryable when the system failed.
func (d *Destination) ddlError(table, stmt string, err error) error {
	what := "change table " + table
	if stmt != "" {
		what += ": " + stmt
	}
	e := fmt.Errorf("%s: %s", what, pg.Reason(err, d.cfg.URL))
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "42501" && strings.HasPrefix(stmt, "CREATE"):
		schema := "public"
		if parts, _ := pg.SplitName(table); len(parts) == 2 {
			schema = parts[0]
		}
		return fmt.Errorf("%w: the role needs the CREATE privilege on schema %s (GRANT CREATE ON SCHEMA %s TO the role), or create the table beforehand, or set auto.create to false", e, schema, pg.SQLName(schema))
	case errors.As(err, &pgErr) && pgErr.Code == "42501":
		return fmt.Errorf("%w: only the table's owner may alter it (ALTER TABLE %s OWNER TO the role), or make the change beforehand, or set auto.evolve to false", e, table)
	case pg.Retryable(err):
		return sdk.Retryable(e)
	}
	return e
}
