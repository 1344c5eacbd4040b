package destination

import (
	"slices"
	"strconv"
	"strings"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
)

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
		b.WriteString(r.onConflict())
	}
	return b.String()
}

// onConflict is an upsert's ON CONFLICT clause: on the keys, it sets the
// other columns, or does nothing when there are none.
func (r *run) onConflict() string {
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
	if len(set) == 0 {
		return " ON CONFLICT (" + strings.Join(keys, ", ") + ") DO NOTHING"
	}
	return " ON CONFLICT (" + strings.Join(keys, ", ") + ") DO UPDATE SET " + strings.Join(set, ", ")
}
