package source

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ensurePublication creates the publication for the tables, or adds to an
// existing one the tables it lacks.
func ensurePublication(ctx context.Context, conn *pgx.Conn, name string, tables []*sourceTable) error {
	var exists, all bool
	if err := conn.QueryRow(ctx, `SELECT count(*) > 0, coalesce(bool_or(puballtables), false) FROM pg_publication WHERE pubname = $1`, name).Scan(&exists, &all); err != nil {
		return fmt.Errorf("look up publication %s: %w", name, err)
	}
	if all {
		return nil
	}
	var missing []string
	for _, t := range tables {
		var in bool
		if exists {
			if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid WHERE p.pubname = $1 AND r.prrelid = $2)`, name, t.oid).Scan(&in); err != nil {
				return fmt.Errorf("look up publication %s: %w", name, err)
			}
		}
		if !in {
			missing = append(missing, t.ident)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sql := fmt.Sprintf("CREATE PUBLICATION %s FOR TABLE %s", pgx.Identifier{name}.Sanitize(), strings.Join(missing, ", "))
	if exists {
		sql = fmt.Sprintf("ALTER PUBLICATION %s ADD TABLE %s", pgx.Identifier{name}.Sanitize(), strings.Join(missing, ", "))
	}
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("create publication %s for %s (it needs ownership of the tables): %w", name, strings.Join(missing, ", "), err)
	}
	return nil
}
