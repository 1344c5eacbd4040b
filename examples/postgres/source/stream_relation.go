package source

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
)

// relation is a replicated table as its latest pgoutput Relation message
// describes it: the columns its tuples carry, in order.
type relation struct {
	table *sourceTable // nil: a table the source does not read
	names []string
	oids  []uint32
	keys  []string          // the key's column names (catalog_identity.go); none: keyless
	read  []int             // where in its tuples each column a chunk reads is (sourceTable.columns); -1: not there
	meta  string            // the columns as its records describe them (catalog_columns.go)
	was   map[string]string // the columns renamed while streaming: new name → first name
	types *userTypes        // the user types its columns use (catalog_usertypes.go)
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
		return rel, r.s.checkNotAncestor(ctx, m.RelationID) // catalog_partition.go
	}
	rel.keys = rel.table.keyNames()
	for _, c := range rel.table.columns {
		rel.read = append(rel.read, slices.Index(rel.names, c))
	}
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

// rowText names the row t of a keyless table as a chunk's row names it
// (rowText): by its values of the columns a chunk reads. A tuple without
// one of them names no row a chunk has.
func (r *relation) rowText(t *pglogrepl.TupleData) string {
	vals := make([][]byte, len(r.read))
	for i, at := range r.read {
		if at < 0 || at >= len(t.Columns) {
			return ""
		}
		switch c := t.Columns[at]; c.DataType {
		case pglogrepl.TupleDataTypeText:
			vals[i] = append([]byte{}, c.Data...) // not nil, which is NULL
		case pglogrepl.TupleDataTypeNull:
		default:
			return "" // an unchanged TOASTed value
		}
	}
	return rowText(vals)
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

// readColumns reads the named columns of the row of rel whose key's text
// is key into d; nothing when the row is gone.
func (s *Source) readColumns(ctx context.Context, rel *relation, key []string, names []string, d sdk.StructuredData) error {
	tb := rel.table
	if key == nil || tb.keyless() {
		return nil
	}
	cols := make([]string, len(names))
	for i, n := range names {
		cols[i] = pg.Quote(n)
	}
	where := make([]string, len(tb.keys))
	args := make([][]byte, len(tb.keys))
	for i, k := range tb.keys {
		where[i] = pg.Quote(tb.columns[k]) + " = $" + strconv.Itoa(i+1) + "::text::" + tb.types[k]
		args[i] = []byte(key[i])
	}
	sql := fmt.Sprintf("SELECT %s FROM %s WHERE %s", strings.Join(cols, ", "), tb.rows(), strings.Join(where, " AND "))
	rr := s.conn.PgConn().ExecParams(ctx, sql, args, nil, nil, nil)
	fields := rr.FieldDescriptions()
	for rr.NextRow() {
		for i, v := range rr.Values() {
			if v == nil {
				d[names[i]] = nil
				continue
			}
			d[names[i]] = value(fields[i].DataTypeOID, v)
		}
	}
	if _, err := rr.Close(); err != nil {
		return s.errorf("read the unchanged values of an update in "+strings.ReplaceAll(tb.ident, "%", "%%")+": %s", err)
	}
	return nil
}
