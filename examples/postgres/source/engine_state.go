package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The state table (snapshot.stateTable) keeps, in the source database,
// one row per replication slot: in its tables column, where the read of
// each table stands (tableState), which the snapshot engine saves as it
// emits each chunk (engine.go), and which tables the slot's snapshots
// covered, so that a table added to tables later is read. Its snapshot
// column has the transactions running when the row was written first (as
// txid_snapshot's text): about when the slot's snapshot was taken.

// tableState is a table's entry in the `tables` column of the state row.
type tableState struct {
	After []string `json:"after,omitempty"` // the next chunk starts after this key (a keyless table's: this ctid)
	Done  bool     `json:"done,omitempty"`  // the table is read
	// End is where the table's rows ended when its read began: the rows
	// it reads are not beyond it. nil: not measured yet.
	End *tableEnd `json:"end,omitempty"`
	// Seen is which transactions the snapshot the table's read is against
	// saw (txid_snapshot's text): a row version it did not see was written
	// by a transaction whose changes stream, so the table's chunks leave
	// it out (engine_versions.go).
	Seen string `json:"seen,omitempty"`
	// Consistent is that snapshot's consistent point: the changes of a
	// transaction that commits before it are left out of the stream, the
	// chunks carry its row versions.
	Consistent string `json:"consistent,omitempty"`
	// Early is, in a state saved without Consistent, the transactions that
	// changed the table after it was added to the publication and committed
	// before that snapshot's consistent point, whose changes streamed: the
	// chunks leave their row versions out.
	Early []uint32 `json:"early,omitempty"`
	// Low is the LSN of the low watermark of a done table's last chunk:
	// while the slot is confirmed at or before it, that chunk's rows may
	// not all be acknowledged, and a restart reads it again.
	Low string `json:"low,omitempty"`
	// Signal is the commit LSN of the last signal applied to the table
	// (signal.go): one streamed again after a restart is not applied twice.
	// A chunk of an earlier read of the table emits nothing.
	Signal string `json:"signal,omitempty"`
}

// tableEnd is where a table's rows ended when its read began: its
// greatest key's text (nil: it had no rows), or a keyless table's blocks.
type tableEnd struct {
	Key    []string `json:"key,omitempty"`
	Blocks uint64   `json:"blocks,omitempty"`
	CTID   bool     `json:"ctid,omitempty"` // the table had no key: it is read by ctid
}

// loadTableStates returns the `tables` column of the slot's state row;
// false when there is no row, no such column or it is NULL.
func (s *Source) loadTableStates(ctx context.Context) (map[string]tableState, bool, error) {
	var raw []byte
	err := s.conn.QueryRow(ctx, `SELECT tables FROM `+s.stateIdent+` WHERE slot = $1`, s.cfg.Slot.Name).Scan(&raw)
	var pgErr *pgconn.PgError
	if errors.Is(err, pgx.ErrNoRows) || undefinedTable(err) || errors.As(err, &pgErr) && pgErr.Code == "42703" {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.errorf(`parameter "snapshot.stateTable": read the slot's tables: %s`, err)
	}
	if raw == nil {
		return nil, false, nil
	}
	var state map[string]tableState
	if err := json.Unmarshal(raw, &state); err != nil {
		return nil, false, fmt.Errorf(`parameter "snapshot.stateTable": the tables of slot %s: %w`, s.cfg.Slot.Name, err)
	}
	return state, true, nil
}

// saveTableStates writes the `tables` column of the slot's state row on
// conn, creating the table, the column or the row when missing.
func (s *Source) saveTableStates(ctx context.Context, conn *pgx.Conn, state map[string]tableState) error {
	raw, _ := json.Marshal(state)
	_, err := conn.Exec(ctx, `INSERT INTO `+s.stateIdent+` (slot, snapshot, tables) VALUES ($1, txid_current_snapshot()::text, $2)
		ON CONFLICT (slot) DO UPDATE SET tables = excluded.tables`, s.cfg.Slot.Name, string(raw))
	if undefinedTable(err) || undefinedColumn(err) {
		if err = s.createStateTable(ctx, conn); err == nil {
			return s.saveTableStates(ctx, conn, state)
		}
	}
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42501" {
		return fmt.Errorf(`parameter "snapshot.stateTable": may not write table %s (%s): the snapshot keeps where its read of each table stands there; grant the role CREATE on the table's schema (or create the table and grant the role INSERT and UPDATE on it: CREATE TABLE %s (slot text PRIMARY KEY, snapshot text NOT NULL, taken timestamptz NOT NULL DEFAULT now(), tables jsonb)), name a table it may write, or set snapshot.mode to never`, s.stateIdent, pgErr.Message, s.stateIdent)
	}
	if err != nil {
		return s.errorf(`parameter "snapshot.stateTable": record where the snapshot stands: %s`, err)
	}
	return nil
}

// createStateTable creates the state table, or the tables column of one
// written before it existed.
func (s *Source) createStateTable(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.stateIdent+` (
		slot text PRIMARY KEY,
		snapshot text NOT NULL,
		taken timestamptz NOT NULL DEFAULT now(),
		tables jsonb)`)
	if err == nil {
		_, err = conn.Exec(ctx, `ALTER TABLE `+s.stateIdent+` ADD COLUMN IF NOT EXISTS tables jsonb`)
	}
	return err
}

// forgetSlot deletes the slot's row, if there is one.
func (s *Source) forgetSlot(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, `DELETE FROM `+s.stateIdent+` WHERE slot = $1`, s.cfg.Slot.Name); err != nil && !undefinedTable(err) {
		return fmt.Errorf(`parameter "snapshot.stateTable": delete the slot's row: %w`, err)
	}
	return nil
}

// undefinedColumn reports whether err is PostgreSQL's for a column that
// does not exist (42703).
func undefinedColumn(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42703"
}
