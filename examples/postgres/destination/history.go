package destination

import (
	"maps"
	"slices"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
)

// columnHistory is what the changes the destination made to a table did
// to its columns: each column it renamed, by the name the column had,
// and the types it gave another type in place of, by the column's name
// now.
//
// Records reach concurrent Writes in lanes by key, which keep the order
// of one key's records, not of one table's: a record of another key that
// is older than a change the source made to its table, as its
// postgres.columns says, may be written after the change its newer
// records made. The history keeps such a record from undoing the change:
// a type given in place of another is not changed back (see
// [Destination.evolve]; the older values fit the newer type, which the
// source changed them to), and a value of a renamed column goes to the
// column under its new name rather than to a column added again under the
// old (see [Destination.renamed]). The history lasts as long as the
// destination: a source that changes a column back while it runs has its
// column keep the newer type or name.
type columnHistory struct {
	renamed map[string]string   // the column's name before → now
	types   map[string][]string // the column's name now → the types it had
}

// columnChange is a change of a column that the history keeps: a rename
// (was is the column's name before) or a change of type (wasType is the
// type before).
type columnChange struct {
	column       string // its name after the change
	was, wasType string
}

// remember notes that changes were made to table.
func (d *Destination) remember(table string, changes []columnChange) {
	if len(changes) == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.history[table]
	if h == nil {
		h = &columnHistory{renamed: map[string]string{}, types: map[string][]string{}}
		d.history[table] = h
	}
	for _, c := range changes {
		if c.was != "" {
			for before, now := range h.renamed {
				if now == c.was {
					h.renamed[before] = c.column
				}
			}
			h.renamed[c.was] = c.column
			delete(h.renamed, c.column) // renamed back: the name is the column's again
			h.types[c.column] = h.types[c.was]
			delete(h.types, c.was)
		}
		if c.wasType != "" {
			h.types[c.column] = append(h.types[c.column], c.wasType)
		}
	}
}

// changedFrom reports whether the destination gave column col of table t
// another type in place of typ.
func (d *Destination) changedFrom(t *table, col, typ string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lockedChangedFrom(t, col, typ)
}

func (d *Destination) lockedChangedFrom(t *table, col, typ string) bool {
	h := d.history[t.name]
	return h != nil && slices.Contains(h.types[col], typ)
}

// renamed returns a record's key and values with the columns the
// destination renamed in t under their names now, if the record is older
// than the rename: its postgres.columns, described, has the column under
// the name it had and none under the name it has, and so has t. Else it
// returns key and values themselves. It copies them, never changes them.
func (d *Destination) renamed(t *table, described []pg.Column, key, values map[string]any) (map[string]any, map[string]any) {
	d.mu.Lock()
	h := d.history[t.name]
	var pairs [][2]string // before, now
	for _, c := range described {
		if now, ok := h.lookup(c.Name); ok {
			pairs = append(pairs, [2]string{c.Name, now})
		}
	}
	d.mu.Unlock()
	move := func(m map[string]any, before, now string) map[string]any {
		v, ok := m[before]
		if !ok {
			return m
		}
		m = maps.Clone(m)
		delete(m, before)
		m[now] = v
		return m
	}
	for _, p := range pairs {
		before, now := p[0], p[1]
		_, hasBefore := t.types[before]
		_, hasNow := t.types[now]
		if hasBefore || !hasNow || slices.ContainsFunc(described, func(c pg.Column) bool { return c.Name == now }) {
			continue
		}
		key, values = move(key, before, now), move(values, before, now)
	}
	return key, values
}

// lookup returns the name now of the column called name before a rename.
func (h *columnHistory) lookup(name string) (string, bool) {
	if h == nil {
		return "", false
	}
	now, ok := h.renamed[name]
	return now, ok
}
