package source

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
)

// carriedDefault is an SQL condition on a default expression's node tree
// (expr, a pg_node_tree) of a column or domain of type ownType (an SQL
// expression giving its OID): true when the destination can take the
// expression as it is, so that the source carries it. The rule: every
// function and operator it calls is built in (in pg_catalog) and not
// volatile — constants, casts, lower('X'), now(), CURRENT_TIMESTAMP pass;
// nextval(…), random(), gen_random_uuid() and user functions do not —
// and it names no user object the destination may lack: no user
// collation, no reg* constant ('seq'::regclass), and no user type other
// than ownType and what it is made of (its base type, element type and
// fields), which the records describe in postgres.types.
func carriedDefault(expr, ownType string) string {
	return fmt.Sprintf(`(%[1]s::text !~ '\{NEXTVALUEEXPR'
	AND NOT EXISTS (SELECT FROM regexp_matches(%[1]s::text, ':(?:funcid|opfuncid) (\d+)', 'g') f(m)
		LEFT JOIN pg_proc p ON p.oid = f.m[1]::oid
		WHERE p.oid IS NULL OR p.provolatile = 'v' OR p.pronamespace <> 'pg_catalog'::regnamespace)
	AND NOT EXISTS (SELECT FROM regexp_matches(%[1]s::text, ':(?:opno|inputcollid|constcollid|resultcollid|collOid) (\d+)', 'g') f(m)
		WHERE f.m[1]::oid >= %[3]d)
	AND NOT EXISTS (SELECT FROM regexp_matches(%[1]s::text, ':consttype (\d+)', 'g') f(m) JOIN pg_type r ON r.oid = f.m[1]::oid
		WHERE r.typname::text LIKE 'reg%%' AND r.typnamespace = 'pg_catalog'::regnamespace)
	AND NOT EXISTS (SELECT FROM regexp_matches(%[1]s::text, ':[a-z_]*typ(?:e|eid|id) (\d+)', 'g') f(m)
		WHERE f.m[1]::oid >= %[3]d AND f.m[1]::oid NOT IN (
			WITH RECURSIVE made(oid) AS (
				SELECT (%[2]s)::oid
				UNION SELECT part.oid FROM made JOIN pg_type t ON t.oid = made.oid CROSS JOIN LATERAL (
					SELECT t.typbasetype UNION ALL SELECT t.typelem
					UNION ALL SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0) part(oid)
				WHERE part.oid <> 0)
			SELECT oid FROM made)))`, expr, ownType, firstUserOID)
}

// columnCatalog is what the catalog says of a table's stored columns
// beyond their names and types: each column's type OID and default (""
// when it has none or the source does not carry it), by column name.
type columnCatalog struct {
	oids     map[string]uint32
	defaults map[string]string
}

// readColumnCatalog reads the type OIDs and carried defaults of the
// stored columns of the table with the given OID.
func readColumnCatalog(ctx context.Context, conn *pgx.Conn, table uint32) (columnCatalog, error) {
	rows, _ := conn.Query(ctx, `
		SELECT a.attname::text, a.atttypid,
			CASE WHEN d.adbin IS NOT NULL AND `+carriedDefault("d.adbin", "a.atttypid")+` THEN pg_get_expr(d.adbin, d.adrelid) END
		FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''`, table)
	c := columnCatalog{oids: map[string]uint32{}, defaults: map[string]string{}}
	var name string
	var oid uint32
	var def *string
	_, err := pgx.ForEachRow(rows, []any{&name, &oid, &def}, func() error {
		c.oids[name] = oid
		if def != nil {
			c.defaults[name] = *def
		}
		return nil
	})
	if err != nil {
		return columnCatalog{}, err
	}
	return c, nil
}

// userTypes are the user types a table's columns use, as its records
// describe them in postgres.types, and what the source needs to notice
// an enum label added since they were read.
type userTypes struct {
	meta   string               // the postgres.types value; "" when the columns use no user type
	names  []string             // the columns, which the types were read for
	oids   []uint32             // their type OIDs
	enums  []enumColumn         // the columns holding enum values
	labels map[uint32]set       // each enum's labels, by its OID
	types  map[uint32]*typeInfo // every type read, by OID
}

type set map[string]struct{}

// enumColumn is a column whose values are labels of an enum: of the enum,
// of a domain over it, or an array of either.
type enumColumn struct {
	name  string
	enum  uint32
	array bool
}

// typeInfo is one type as the catalog describes it.
type typeInfo struct {
	oid  uint32
	kind byte   // pg_type.typtype: e enum, d domain, c composite, b base (arrays among them), …
	elem uint32 // for an array type, its element type; else 0
	base uint32 // for a domain, its base type
	desc pg.Type
	deps []uint32 // the types it is made of: element, base, fields
	// described: whether it goes into postgres.types: an enum, a domain,
	// or a composite type of its own (not a table's row type).
	described bool
}

// firstUserOID is PostgreSQL's FirstNormalObjectId: types below it are
// built in.
const firstUserOID = 16384

// describeTypes reads the user types that columns of the given names and
// type OIDs use, directly or through other types, as postgres.types
// describes them.
func describeTypes(ctx context.Context, conn *pgx.Conn, names []string, oids []uint32) (*userTypes, error) {
	u := &userTypes{names: names, oids: oids, labels: map[uint32]set{}, types: map[uint32]*typeInfo{}}
	toRead := []uint32{}
	for _, oid := range oids {
		if oid >= firstUserOID {
			toRead = append(toRead, oid)
		}
	}
	for len(toRead) > 0 {
		read, err := readTypes(ctx, conn, toRead)
		if err != nil {
			return nil, err
		}
		toRead = toRead[:0]
		for _, t := range read {
			u.types[t.oid] = t
			for _, dep := range t.deps {
				if _, seen := u.types[dep]; !seen && dep >= firstUserOID && !slices.Contains(toRead, dep) {
					toRead = append(toRead, dep)
				}
			}
		}
	}
	var ordered []pg.Type
	placed := map[uint32]bool{}
	var place func(oid uint32)
	place = func(oid uint32) {
		t := u.types[oid]
		if t == nil || placed[oid] {
			return
		}
		placed[oid] = true
		for _, dep := range t.deps {
			place(dep)
		}
		if t.described {
			ordered = append(ordered, t.desc)
		}
		if t.kind == 'e' {
			u.labels[oid] = setOf(t.desc.Labels)
		}
	}
	for i, oid := range oids {
		place(oid)
		if enum, array := u.enumOf(oid); enum != 0 {
			u.enums = append(u.enums, enumColumn{name: names[i], enum: enum, array: array})
		}
	}
	if len(ordered) > 0 {
		u.meta = pg.EncodeTypes(ordered)
	}
	return u, nil
}

// enumOf returns the enum whose labels a value of type oid holds, through
// domains and arrays; 0 when none.
func (u *userTypes) enumOf(oid uint32) (enum uint32, array bool) {
	for range 8 { // a domain over an array of a domain over an enum is as deep as it gets
		t := u.types[oid]
		switch {
		case t == nil:
			return 0, false
		case t.kind == 'e':
			return oid, array
		case t.kind == 'd':
			oid = t.base
		case t.elem != 0:
			oid, array = t.elem, true
		default:
			return 0, false
		}
	}
	return 0, false
}

// readTypes reads the types with the given OIDs from the catalog.
func readTypes(ctx context.Context, conn *pgx.Conn, oids []uint32) ([]*typeInfo, error) {
	rows, _ := conn.Query(ctx, `
		SELECT t.oid, t.typtype::text, format_type(t.oid, NULL),
			coalesce((SELECT e.oid FROM pg_type e WHERE e.typarray = t.oid), 0),
			t.typbasetype, CASE WHEN t.typbasetype <> 0 THEN format_type(t.typbasetype, t.typtypmod) ELSE '' END, t.typnotnull,
			CASE WHEN t.typdefaultbin IS NOT NULL AND `+carriedDefault("t.typdefaultbin", "t.oid")+` THEN pg_get_expr(t.typdefaultbin, 0) ELSE '' END,
			array(SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c WHERE c.contypid = t.oid AND c.contype = 'c' ORDER BY c.conname),
			array(SELECT e.enumlabel::text FROM pg_enum e WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder),
			coalesce((SELECT r.relkind = 'c' FROM pg_class r WHERE r.oid = t.typrelid), false),
			array(SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum),
			array(SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum),
			array(SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum)
		FROM pg_type t WHERE t.oid = ANY ($1::oid[])`, oids)
	var out []*typeInfo
	var (
		oid, elem, base    uint32
		kind, name, baseAs string
		notNull, ownType   bool
		def                string
		checks, labels     []string
		fieldNames, fields []string
		fieldOIDs          []uint32
	)
	_, err := pgx.ForEachRow(rows, []any{&oid, &kind, &name, &elem, &base, &baseAs, &notNull, &def, &checks, &labels, &ownType, &fieldNames, &fields, &fieldOIDs}, func() error {
		t := &typeInfo{oid: oid, kind: kind[0], elem: elem, base: base, desc: pg.Type{Name: name}}
		switch t.kind {
		case 'e':
			t.described = true
			t.desc.Kind, t.desc.Labels = pg.KindEnum, labels
		case 'd':
			t.described = true
			t.desc.Kind, t.desc.Base, t.desc.NotNull, t.desc.Checks, t.desc.Default = pg.KindDomain, baseAs, notNull, checks, def
			t.deps = []uint32{base}
		case 'c':
			t.described = ownType
			t.desc.Kind = pg.KindComposite
			for i, f := range fieldNames {
				t.desc.Fields = append(t.desc.Fields, pg.Field{Name: f, Type: fields[i]})
			}
			t.deps = fieldOIDs
		}
		if elem != 0 {
			t.deps = append(t.deps, elem)
		}
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// unknownLabel returns the first value in data of an enum column that is
// not one of the enum's labels as read: a label added since, which calls
// for reading the types again. ok is false when every value is known.
func (u *userTypes) unknownLabel(data sdk.StructuredData) (column, label string, ok bool) {
	if u == nil {
		return "", "", false
	}
	for _, c := range u.enums {
		text, isText := data[c.name].(string)
		if !isText {
			continue
		}
		labels := []string{text}
		if c.array {
			labels = arrayElements(text)
		}
		for _, l := range labels {
			if _, known := u.labels[c.enum][l]; !known {
				return c.name, l, true
			}
		}
	}
	return "", "", false
}

// followLabels reads the types of a table's columns again when data holds
// an enum label they did not have, and returns them; else u. Labels are
// added to an enum (ALTER TYPE … ADD VALUE) without a message to logical
// replication, so a row using one is the first sign of it. An error says
// what was being done, in a format for [Source.errorf].
func followLabels(ctx context.Context, conn *pgx.Conn, table string, u *userTypes, data sdk.StructuredData) (*userTypes, string, error) {
	column, label, unknown := u.unknownLabel(data)
	if !unknown {
		return u, "", nil
	}
	reread, err := describeTypes(ctx, conn, u.names, u.oids)
	if err != nil {
		what := fmt.Sprintf("table %s: column %q holds %q, which its enum did not have when read; reading the enum again: ", table, column, label)
		return nil, strings.ReplaceAll(what, "%", "%%") + "%s", err
	}
	return reread, "", nil
}

// arrayElements returns the elements of an array's text, as PostgreSQL
// writes it ({a,"b c",NULL}, nested for more dimensions), NULLs left out.
func arrayElements(text string) []string {
	var out []string
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '{', '}', ',', ' ':
			continue
		case '"':
			var b strings.Builder
			for i++; i < len(text) && text[i] != '"'; i++ {
				if text[i] == '\\' && i+1 < len(text) {
					i++
				}
				b.WriteByte(text[i])
			}
			out = append(out, b.String())
		default:
			j := i
			for j < len(text) && text[j] != ',' && text[j] != '}' {
				j++
			}
			if e := text[i:j]; !strings.EqualFold(e, "NULL") {
				out = append(out, e)
			}
			i = j - 1
		}
	}
	return out
}

func setOf(labels []string) set {
	s := make(set, len(labels))
	for _, l := range labels {
		s[l] = struct{}{}
	}
	return s
}

// readUserTypes reads the defaults of t's columns and the user types they
// use, as the snapshot's records describe them.
func (t *sourceTable) readUserTypes(ctx context.Context, conn *pgx.Conn) error {
	cat, err := readColumnCatalog(ctx, conn, t.oid)
	if err != nil {
		return fmt.Errorf("read the defaults of the columns of table %s: %w", t.ident, err)
	}
	oids := make([]uint32, len(t.columns))
	for i, name := range t.columns {
		oids[i] = cat.oids[name]
	}
	t.defaults = cat.defaults
	if t.userTypes, err = describeTypes(ctx, conn, t.columns, oids); err != nil {
		return fmt.Errorf("read the user types of the columns of table %s: %w", t.ident, err)
	}
	return nil
}

// snapshotTypes gives the snapshot's records of t the postgres.types of
// its columns, read again first if a record holds an enum label they
// lack (one added after Open).
func (s *Source) snapshotTypes(ctx context.Context, t *sourceTable, recs []sdk.Record) error {
	if t.userTypes == nil || t.userTypes.meta == "" {
		return nil
	}
	for _, rec := range recs {
		after, _ := rec.Payload.After.(sdk.StructuredData)
		types, what, err := followLabels(ctx, s.conn, t.ident, t.userTypes, after)
		if err != nil {
			return s.errorf(what, err)
		}
		t.userTypes = types
	}
	for _, rec := range recs {
		rec.Metadata[pg.TypesKey] = t.userTypes.meta
	}
	return nil
}

// followTypes reads the types of rel's columns again if data holds an
// enum label they lack, so that the record of data, and those after it,
// describe the enum as it is now.
func (r *replicator) followTypes(ctx context.Context, rel *relation, data sdk.StructuredData) error {
	types, what, err := followLabels(ctx, r.s.conn, rel.table.ident, rel.types, data)
	if err != nil {
		return r.s.errorf(what, err)
	}
	rel.types = types
	return nil
}
