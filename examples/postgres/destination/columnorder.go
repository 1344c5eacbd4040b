package destination

import (
	"slices"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
)

// inSourceOrder returns the names of missing in the order cols describes
// them (a record's postgres.columns: the source table's order), those it
// does not describe last, in their order; missing is left as it is. Columns
// added together are so added in the source's order, and the table's
// columns follow it.
func inSourceOrder(missing []string, cols []pg.Column) []string {
	place := func(name string) int {
		if i := slices.IndexFunc(cols, func(c pg.Column) bool { return c.Name == name }); i >= 0 {
			return i
		}
		return len(cols)
	}
	ordered := slices.Clone(missing)
	slices.SortStableFunc(ordered, func(a, b string) int { return place(a) - place(b) })
	return ordered
}
