package source

import (
	"context"
	"fmt"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// checkServer fails, saying what to change, unless the server can feed
// logical replication to the connection's role.
func checkServer(ctx context.Context, conn *pgx.Conn) error {
	var level string
	if err := conn.QueryRow(ctx, `SHOW wal_level`).Scan(&level); err != nil {
		return fmt.Errorf("read wal_level: %w", err)
	}
	if level != "logical" {
		return fmt.Errorf("PostgreSQL's wal_level is %q, and the source needs logical: set wal_level = logical in postgresql.conf (or ALTER SYSTEM SET wal_level = logical) and restart the server", level)
	}
	var role string
	var replication bool
	if err := conn.QueryRow(ctx, `SELECT current_user::text, rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&role, &replication); err != nil {
		return fmt.Errorf("read the role's attributes: %w", err)
	}
	if !replication {
		return fmt.Errorf("permission denied: role %q may not use logical replication: ALTER ROLE %s WITH REPLICATION (or connect as a role that has it)", role, pg.SQLName(role))
	}
	return nil
}

// applicationName is what pg_stat_activity calls the source's sessions.
const applicationName = "connkit-postgres-source"

// connectQuery opens a connection the source queries the catalog, the
// tables and the slot on, or reads a chunk on, with the settings its
// values are read in: times in UTC, dates in ISO format.
func connectQuery(ctx context.Context, url string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["timezone"] = "UTC"
	cfg.RuntimeParams["datestyle"] = "ISO"
	cfg.RuntimeParams["application_name"] = applicationName
	// The stream carries only WAL the server has flushed: a watermark,
	// and the state saved with a chunk, are flushed as they commit, not
	// when the WAL writer next runs (up to wal_writer_delay later) on a
	// server whose synchronous_commit is off. Standbys are not waited for.
	cfg.RuntimeParams["synchronous_commit"] = "local"
	return pgx.ConnectConfig(ctx, cfg)
}

// connectReplication opens a replication connection to url's database, in
// UTC like the source's other session.
func connectReplication(ctx context.Context, url string) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["replication"] = "database"
	cfg.RuntimeParams["timezone"] = "UTC"
	cfg.RuntimeParams["datestyle"] = "ISO"
	cfg.RuntimeParams["application_name"] = applicationName
	return pgconn.ConnectConfig(ctx, cfg)
}
