package source

import (
	"context"
	"errors"
	"fmt"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The first snapshot's transactions (txid_snapshot's text) are kept in a
// table of the source database, one row per replication slot, written
// before the snapshot's first record is read. A snapshot resumed after a
// restart needs them (see resumed); they are kept out of the positions so
// that a row read again unchanged by a snapshot started over has the
// position it had.

// saveFirstSnapshot records view as the snapshot of the slot, creating the
// table when missing. When the role may not create it, it logs why and
// records nothing: a resumed snapshot then delivers again the rows changed
// since the first one.
func (s *Source) saveFirstSnapshot(ctx context.Context, view string) error {
	ident := s.stateIdent
	conn, err := pgx.Connect(ctx, s.cfg.URL)
	if err != nil {
		return s.errorf("connect to PostgreSQL to record the snapshot: %s", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, ident).Scan(&exists); err != nil {
		return s.errorf(`parameter "snapshot.stateTable": look up the table: %s`, err)
	}
	if !exists {
		_, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+ident+` (
			slot text PRIMARY KEY,
			snapshot text NOT NULL,
			taken timestamptz NOT NULL DEFAULT now())`)
		if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42501" {
			sdk.Logger(ctx).Warn(fmt.Sprintf(`postgres: parameter "snapshot.stateTable": may not create table %s (%s): a snapshot resumed after a restart will deliver the rows changed since it started again, under new positions; grant the role CREATE on the table's schema, or name a table it may create`, ident, pgErr.Message))
			return nil
		}
		if err != nil {
			return s.errorf(`parameter "snapshot.stateTable": create the table: %s`, err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO `+ident+` (slot, snapshot) VALUES ($1, $2)
		ON CONFLICT (slot) DO UPDATE SET snapshot = excluded.snapshot, taken = excluded.taken`, s.cfg.Slot.Name, view); err != nil {
		return s.errorf(`parameter "snapshot.stateTable": record the snapshot: %s`, err)
	}
	return nil
}

// loadFirstSnapshot returns the snapshot recorded for the slot; false
// when there is none (the table could not be created, or was dropped).
func (s *Source) loadFirstSnapshot(ctx context.Context) (txSnapshot, bool, error) {
	var view string
	err := s.conn.QueryRow(ctx, `SELECT snapshot FROM `+s.stateIdent+` WHERE slot = $1`, s.cfg.Slot.Name).Scan(&view)
	if errors.Is(err, pgx.ErrNoRows) || undefinedTable(err) {
		return txSnapshot{}, false, nil
	}
	if err != nil {
		return txSnapshot{}, false, s.errorf(`parameter "snapshot.stateTable": read the first snapshot: %s`, err)
	}
	snap, err := parseTxSnapshot(view)
	if err != nil {
		return txSnapshot{}, false, fmt.Errorf(`parameter "snapshot.stateTable": the row of slot %s: %w`, s.cfg.Slot.Name, err)
	}
	return snap, true, nil
}

// forgetFirstSnapshot deletes the slot's row, if there is one.
func (s *Source) forgetFirstSnapshot(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, `DELETE FROM `+s.stateIdent+` WHERE slot = $1`, s.cfg.Slot.Name); err != nil && !undefinedTable(err) {
		return fmt.Errorf(`parameter "snapshot.stateTable": delete the slot's row: %w`, err)
	}
	return nil
}

// stateTable returns the table's name, quoted.
func stateTable(name string) (string, error) {
	parts, err := pg.SplitName(name)
	if err != nil {
		return "", fmt.Errorf(`parameter "snapshot.stateTable": %w`, err)
	}
	return pgx.Identifier(parts).Sanitize(), nil
}

// undefinedTable reports whether err is PostgreSQL's for a table that does
// not exist (42P01).
func undefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}
