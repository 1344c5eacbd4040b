package destination

import (
	"github.com/connkit/connkit/examples/postgres/internal/pg"
)

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
