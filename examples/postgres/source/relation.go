package source

import (
	"context"
	"slices"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
)

// relation is a replicated table as its latest pgoutput Relation message
// describes it: the columns its tuples carry, in order.
type relation struct {
	table *sourceTable // nil: a table the source does not read
	names []string
	oids  []uint32
	keys  []string          // the key's column names (identity.go); none: keyless
	meta  string            // the columns as its records describe them (columns.go)
	was   map[string]string // the columns renamed while streaming: new name → first name
	types *userTypes        // the user types its columns use (usertypes.go)
}

// newRelation describes the table of a Relation message m; prev is the
// relation it replaces, if any.
func (r *replicator) newRelation(ctx context.Context, m *pglogrepl.RelationMessage, prev *relation) (*relation, error) {
	rel := &relation{table: r.s.catalog.byOID[m.RelationID]}
	for _, c := range m.Columns {
		rel.names = append(rel.names, c.Name)
		rel.oids = append(rel.oids, c.DataType)
	}
	if rel.table == nil {
		return rel, r.s.checkNotAncestor(ctx, m.RelationID) // partition.go
	}
	rel.keys = rel.table.keyNames()
	var err error
	if rel.meta, rel.was, err = r.relationColumns(ctx, rel.table, m, prev); err != nil {
		return nil, err
	}
	if rel.types, err = describeTypes(ctx, r.s.conn, rel.names, rel.oids); err != nil {
		return nil, r.s.failedTo("read the user types of the columns of table "+rel.table.ident, err)
	}
	return rel, nil
}

// data decodes a tuple. A TOASTed value that did not change is not sent:
// its column is left out, so that a destination does not overwrite it.
func (r *relation) data(t *pglogrepl.TupleData) sdk.StructuredData {
	d := make(sdk.StructuredData, len(t.Columns))
	for i, c := range t.Columns {
		if i >= len(r.names) {
			break
		}
		switch c.DataType {
		case pglogrepl.TupleDataTypeNull:
			d[r.names[i]] = nil
		case pglogrepl.TupleDataTypeText:
			d[r.names[i]] = value(r.oids[i], c.Data)
		}
	}
	return d
}

// key picks the key's columns out of d; nil for a keyless table, whose
// records have no key.
func (r *relation) key(d sdk.StructuredData) sdk.Data {
	if len(r.keys) == 0 {
		return nil
	}
	k := make(sdk.StructuredData, len(r.keys))
	for _, name := range r.keys {
		k[name] = d[name]
	}
	return k
}

// keyText returns the text of the primary key's values in t, in key order;
// nil when one of them is not in t (an unchanged TOASTed value).
func (r *relation) keyText(t *pglogrepl.TupleData) []string {
	out := make([]string, 0, len(r.keys))
	for _, name := range r.keys {
		i := slices.Index(r.names, name)
		if i < 0 || i >= len(t.Columns) || t.Columns[i].DataType != pglogrepl.TupleDataTypeText {
			return nil
		}
		out = append(out, string(t.Columns[i].Data))
	}
	return out
}

// fillFromOld sets the columns of the new tuple t that pgoutput left out
// (unchanged TOASTed values) from the old row, which a table with
// REPLICA IDENTITY FULL sends whole.
func (r *relation) fillFromOld(t *pglogrepl.TupleData, after, old sdk.StructuredData) {
	for _, name := range r.unchangedToast(t) {
		if v, ok := old[name]; ok {
			after[name] = v
		}
	}
}

// unchangedToast returns the columns of t whose values are TOASTed and
// unchanged, which pgoutput leaves out of an update.
func (r *relation) unchangedToast(t *pglogrepl.TupleData) []string {
	var missing []string
	for i, c := range t.Columns {
		if c.DataType == pglogrepl.TupleDataTypeToast && i < len(r.names) {
			missing = append(missing, r.names[i])
		}
	}
	return missing
}
