package source

import (
	"context"
	"slices"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/jackc/pglogrepl"
)

// snapshotColumns describes t's columns as the catalog had them at Open.
func (t *sourceTable) snapshotColumns() string {
	cols := make([]pg.Column, len(t.columns))
	for i, name := range t.columns {
		cols[i] = pg.Column{Name: name, Type: t.types[i], NotNull: t.notNull[i], Key: slices.Index(t.keys, i) + 1, Default: t.defaults[name]}
	}
	return pg.EncodeColumns(cols)
}

// relationColumns describes the columns of a pgoutput Relation message for
// table t: their types as format_type spells them (looked up once per type
// and modifier), the primary key in t's order, and whether each was NOT
// NULL at Open (a column added since is taken as nullable), and their
// defaults as the catalog has them now (see [pg.Column.Default]). prev is the relation the message replaces, if any: a column
// at the same place with the same type and a name neither has as the
// other's is a rename; renames seen before carry over.
func (r *replicator) relationColumns(ctx context.Context, t *sourceTable, m *pglogrepl.RelationMessage, prev *relation) (string, map[string]string, error) {
	was := map[string]string{}
	names := make([]string, len(m.Columns))
	for i, c := range m.Columns {
		names[i] = c.Name
	}
	if prev != nil {
		for name, old := range prev.was {
			if slices.Contains(names, name) {
				was[name] = old
			}
		}
		if len(prev.names) == len(names) {
			for i, old := range prev.names {
				if old != names[i] && prev.oids[i] == m.Columns[i].DataType && !slices.Contains(names, old) && !slices.Contains(prev.names, names[i]) {
					was[names[i]] = old
					if before, ok := prev.was[old]; ok {
						was[names[i]] = before // renamed twice: the destination has the first name
					}
				}
			}
		}
	}
	cat, err := readColumnCatalog(ctx, r.s.conn, t.oid)
	if err != nil {
		return "", nil, r.s.failedTo("read the defaults of the columns of table "+t.ident, err)
	}
	cols := make([]pg.Column, len(m.Columns))
	keys := t.keyNames()
	for i, c := range m.Columns {
		typ, err := r.s.typeName(ctx, c.DataType, c.TypeModifier)
		if err != nil {
			return "", nil, err
		}
		notNull, atOpen := false, c.Name
		if first, ok := was[c.Name]; ok {
			atOpen = first
		}
		if k := slices.Index(t.columns, atOpen); k >= 0 {
			notNull = t.notNull[k]
		}
		cols[i] = pg.Column{Name: c.Name, Type: typ, NotNull: notNull, Key: slices.Index(keys, c.Name) + 1, Was: was[c.Name], Default: cat.defaults[c.Name]}
	}
	return pg.EncodeColumns(cols), was, nil
}

// typeName returns format_type(oid, typmod), asked of the server once per
// pair.
func (s *Source) typeName(ctx context.Context, oid uint32, typmod int32) (string, error) {
	k := typeKey{oid, typmod}
	if name, ok := s.catalog.typeNames[k]; ok {
		return name, nil
	}
	var name string
	if err := s.conn.QueryRow(ctx, `SELECT format_type($1::oid, $2::int)`, oid, typmod).Scan(&name); err != nil {
		return "", s.errorf("look up a column's type: %s", err)
	}
	if s.catalog.typeNames == nil {
		s.catalog.typeNames = map[typeKey]string{}
	}
	s.catalog.typeNames[k] = name
	return name, nil
}

type typeKey struct {
	oid    uint32
	typmod int32
}
