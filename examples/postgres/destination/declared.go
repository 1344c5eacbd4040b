package destination

import (
	"github.com/connkit/connkit/examples/postgres/internal/pg"
)

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
