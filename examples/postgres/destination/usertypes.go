package destination

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// typesFor returns what the destination database needs before a record
// of table with metadata md is written: the user types its postgres.types
// describes that the database lacks, created as the source defines them,
// in the order given (a type after those it is made of), and the labels
// an enum lacks, added next to their neighbours in the source's order
// (ALTER TYPE … ADD VALUE IF NOT EXISTS … BEFORE/AFTER …). A type the
// database has is otherwise left as it is. nil: nothing to do, which is
// remembered for this postgres.types value.
func (d *Destination) typesFor(ctx context.Context, table string, md sdk.Metadata) (*schemaChange, error) {
	meta, ok := md[pg.TypesKey]
	if !ok {
		return nil, nil
	}
	if _, fit := d.typesFit.Load(meta); fit {
		return nil, nil
	}
	types, err := d.lastTypes.decode(meta, pg.DecodeTypes)
	if err != nil {
		return nil, sdk.RecordFault(err)
	}
	c := &schemaChange{table: table}
	for _, t := range types {
		if !typeText.MatchString(t.Name) {
			return nil, sdk.RecordFault(fmt.Errorf("metadata %s: %q is not a type name", pg.TypesKey, t.Name))
		}
		var kind string
		var labels []string
		err := d.pool.QueryRow(ctx, `
			SELECT t.typtype::text, array(SELECT e.enumlabel::text FROM pg_enum e WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder)
			FROM pg_type t WHERE t.oid = to_regtype($1)`, t.Name).Scan(&kind, &labels)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			stmt, err := createType(t)
			if err != nil {
				return nil, sdk.RecordFault(err)
			}
			c.add("create_type", stmt)
		case err != nil:
			return nil, d.catalogError("look up type "+t.Name+", which the columns of table", table+" use", err)
		case t.Kind == pg.KindEnum && kind == "e":
			for _, stmt := range addLabels(t.Name, t.Labels, labels) {
				c.add("add_value", stmt)
			}
		}
	}
	if len(c.stmts) == 0 {
		d.typesFit.Store(meta, struct{}{})
		return nil, nil
	}
	return c, nil
}

// createType is the statement that creates t. The expressions of a
// domain's default and checks are sent as the source wrote them; the
// statement goes alone to the server (see [Destination.apply]), so they
// cannot add statements of their own.
func createType(t pg.Type) (string, error) {
	switch t.Kind {
	case pg.KindEnum:
		labels := make([]string, len(t.Labels))
		for i, l := range t.Labels {
			labels[i] = literal(l)
		}
		return "CREATE TYPE " + t.Name + " AS ENUM (" + strings.Join(labels, ", ") + ")", nil
	case pg.KindDomain:
		if !typeText.MatchString(t.Base) {
			return "", fmt.Errorf("metadata %s: domain %s: base type %q is not a type name", pg.TypesKey, t.Name, t.Base)
		}
		stmt := "CREATE DOMAIN " + t.Name + " AS " + t.Base
		if t.Default != "" {
			stmt += " DEFAULT " + t.Default
		}
		if t.NotNull {
			stmt += " NOT NULL"
		}
		for _, check := range t.Checks {
			if !strings.HasPrefix(check, "CHECK (") {
				return "", fmt.Errorf("metadata %s: domain %s: %q is not a CHECK constraint", pg.TypesKey, t.Name, check)
			}
			stmt += " " + check
		}
		return stmt, nil
	default: // composite, as DecodeTypes checked
		fields := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			if !typeText.MatchString(f.Type) {
				return "", fmt.Errorf("metadata %s: type %s: field %q: %q is not a type name", pg.TypesKey, t.Name, f.Name, f.Type)
			}
			fields[i] = pg.Quote(f.Name) + " " + f.Type
		}
		return "CREATE TYPE " + t.Name + " AS (" + strings.Join(fields, ", ") + ")", nil
	}
}

// addLabels returns the statements that add to enum name, whose labels
// are have, the labels of want it lacks, each placed after the nearest
// label before it in want that the enum has, else before the nearest one
// after it, so that the labels the source defines sort as they do there.
func addLabels(name string, want, have []string) []string {
	has := map[string]bool{}
	for _, l := range have {
		has[l] = true
	}
	var stmts []string
	for i, l := range want {
		if has[l] {
			continue
		}
		stmt := "ALTER TYPE " + name + " ADD VALUE IF NOT EXISTS " + literal(l)
		if before := neighbour(want[:i], has, true); before != "" {
			stmt += " AFTER " + literal(before)
		} else if after := neighbour(want[i+1:], has, false); after != "" {
			stmt += " BEFORE " + literal(after)
		}
		stmts = append(stmts, stmt)
		has[l] = true
	}
	return stmts
}

// neighbour returns the label of labels nearest to their end (last) or
// start that has holds; "" when none.
func neighbour(labels []string, has map[string]bool, last bool) string {
	for k := range labels {
		if last {
			k = len(labels) - 1 - k
		}
		if has[labels[k]] {
			return labels[k]
		}
	}
	return ""
}

// createdElsewhere reports whether err, from a statement of the given
// kind, says that the type it creates exists: another writer into the
// database (another pipeline's destination) created it since the
// statement was planned.
func createdElsewhere(kind string, err error) bool {
	var pgErr *pgconn.PgError
	return kind == "create_type" && errors.As(err, &pgErr) && pgErr.Code == "42710" // duplicate_object
}

// literal is s as an SQL string literal.
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
