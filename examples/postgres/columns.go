package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/jackc/pglogrepl"
)

// columnsKey is the metadata in which the source describes, in every
// record, the columns of the row's table as they were when the row was
// read or changed: what a destination needs to create the table, and to
// follow it as it changes, with the same types. Its value is a JSON array
// of [column]s in the table's order, e.g.
//
//	[{"name":"id","type":"integer","notNull":true,"key":1},{"name":"price","type":"numeric(40,10)"}]
const columnsKey = "postgres.columns"

// column is one column of a record's table.
type column struct {
	Name string `json:"name"`
	// Type is the column's type as PostgreSQL's format_type spells it:
	// integer, character varying(20), numeric(40,10), text[], a schema-
	// qualified name for a type outside the search path.
	Type    string `json:"type"`
	NotNull bool   `json:"notNull,omitempty"`
	Key     int    `json:"key,omitempty"` // its place in the primary key, from 1; 0: not in it
	// Was is the column's name before a rename seen while the source
	// streamed changes, so that a destination renames its column rather
	// than adding another.
	Was string `json:"was,omitempty"`
}

func encodeColumns(cols []column) string {
	b, err := json.Marshal(cols)
	if err != nil { // strings and numbers only
		panic(err)
	}
	return string(b)
}

func decodeColumns(s string) ([]column, error) {
	var cols []column
	if err := json.Unmarshal([]byte(s), &cols); err != nil {
		return nil, fmt.Errorf("metadata %s: %w", columnsKey, err)
	}
	for i, c := range cols {
		if c.Name == "" || c.Type == "" {
			return nil, fmt.Errorf("metadata %s: column %d has no name or no type", columnsKey, i+1)
		}
	}
	return cols, nil
}

// snapshotColumns describes t's columns as the catalog had them at Open.
func (t *sourceTable) snapshotColumns() string {
	cols := make([]column, len(t.columns))
	for i, name := range t.columns {
		cols[i] = column{Name: name, Type: t.types[i], NotNull: t.notNull[i], Key: slices.Index(t.keys, i) + 1}
	}
	return encodeColumns(cols)
}

// relationColumns describes the columns of a pgoutput Relation message for
// table t: their types as format_type spells them (looked up once per type
// and modifier), the primary key in t's order, and whether each was NOT
// NULL at Open (a column added since is taken as nullable). prev is the relation the message replaces, if any: a column
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
	cols := make([]column, len(m.Columns))
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
		cols[i] = column{Name: c.Name, Type: typ, NotNull: notNull, Key: slices.Index(keys, c.Name) + 1, Was: was[c.Name]}
	}
	return encodeColumns(cols), was, nil
}

// typeName returns format_type(oid, typmod), asked of the server once per
// pair.
func (s *Source) typeName(ctx context.Context, oid uint32, typmod int32) (string, error) {
	k := typeKey{oid, typmod}
	if name, ok := s.typeNames[k]; ok {
		return name, nil
	}
	var name string
	if err := s.conn.QueryRow(ctx, `SELECT format_type($1::oid, $2::int)`, oid, typmod).Scan(&name); err != nil {
		return "", s.errorf("look up a column's type: %s", err)
	}
	if s.typeNames == nil {
		s.typeNames = map[typeKey]string{}
	}
	s.typeNames[k] = name
	return name, nil
}

type typeKey struct {
	oid    uint32
	typmod int32
}
