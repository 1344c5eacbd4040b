package destination

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5/pgtype"
)

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
	rendered := r.rendered()
	cols := textColumns{values: make([][]string, len(rendered)), null: make([][]bool, len(rendered))}
	var bad *runError
	n := len(r.rows)            // the rows every column has rendered
	ends := make([]int, n)      // where each value ends in buf; -1: a string, not in buf
	buf := make([]byte, 0, 256) // the column's values that are not strings
	for c, col := range rendered {
		isKey, old := slices.Contains(r.keys, col), c >= len(r.columns)
		k := textFormOf(r.table.types[col])
		values, null := make([]string, n), make([]bool, n)
		buf = buf[:0]
		for i, rw := range r.rows[:n] {
			v := rw.get(col, isKey)
			if old {
				v = rw.before[col] // the old row, which finds the row
			}
			if s, ok := v.(string); ok && utf8.ValidString(s) {
				values[i], ends[i] = s, -1
				continue
			}
			var err error
			if buf, null[i], err = appendText(buf, v, k); err != nil {
				n = i
				bad = &runError{i, sdk.RecordFault(fmt.Errorf("record at position %q: table %s: %scolumn %q (%s): %w", rw.position, r.table.name, oldRow(old), col, r.table.types[col], err))}
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
	if r.class == insert || r.class.oneEach() || hi-lo < 2 {
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
