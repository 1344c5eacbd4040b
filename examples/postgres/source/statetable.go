package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The state table (snapshot.stateTable) keeps, in the source database,
// one row per replication slot: which transactions the slot's first
// snapshot saw (the snapshot column, txid_snapshot's text), written before
// the snapshot's first record is read, and which tables its snapshots
// covered and how far the snapshot of each added table has got (the
// tables column, see added.go). A snapshot resumed after a restart needs
// the first (see resumed); they are kept out of the positions so that a
// row read again unchanged by a snapshot started over has the position it
// had.

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

// tableState is a table's entry in the `tables` column of the state row.
type tableState struct {
	After []string `json:"after,omitempty"` // an added table's next chunk starts after this key
	Done  bool     `json:"done,omitempty"`  // its snapshot is read
	// Seen is which transactions a snapshot exported right after the table
	// was added to the publication saw (txid_snapshot's text): a row
	// version it did not see was written by a transaction whose changes
	// stream, so the table's chunks leave it out.
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
	// Low is the LSN of the low watermark of a done added table's last
	// chunk: while the slot is confirmed at or before it, that chunk's rows
	// may not all be acknowledged, and a restart reads it again.
	Low string `json:"low,omitempty"`
	// Signal is the commit LSN of the last signal applied to the table
	// (signal.go): one streamed again after a restart is not applied twice.
	Signal string `json:"signal,omitempty"`
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
// conn, creating the table, the column or the row when missing. When the
// role may not, it logs why and returns false: added tables are then not
// snapshotted, only streamed.
func (s *Source) saveTableStates(ctx context.Context, conn *pgx.Conn, state map[string]tableState) (bool, error) {
	raw, _ := json.Marshal(state)
	var exists, column bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'tables' AND NOT attisdropped)`, s.stateIdent).Scan(&exists, &column); err != nil {
		return false, s.errorf(`parameter "snapshot.stateTable": look up the table: %s`, err)
	}
	var err error
	switch {
	case !exists:
		_, err = conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.stateIdent+` (
			slot text PRIMARY KEY,
			snapshot text NOT NULL,
			taken timestamptz NOT NULL DEFAULT now(),
			tables jsonb)`)
	case !column:
		_, err = conn.Exec(ctx, `ALTER TABLE `+s.stateIdent+` ADD COLUMN IF NOT EXISTS tables jsonb`)
	}
	if err == nil {
		_, err = conn.Exec(ctx, `INSERT INTO `+s.stateIdent+` (slot, snapshot, tables) VALUES ($1, txid_current_snapshot()::text, $2)
			ON CONFLICT (slot) DO UPDATE SET tables = excluded.tables`, s.cfg.Slot.Name, string(raw))
	}
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "42501" {
		sdk.Logger(ctx).Warn(fmt.Sprintf(`postgres: parameter "snapshot.stateTable": may not write table %s (%s): tables added to parameter "tables" are not snapshotted, only their changes stream; grant the role CREATE on the table's schema (or ownership of the table), or name a table it may create`, s.stateIdent, pgErr.Message))
		return false, nil
	}
	if err != nil {
		return false, s.errorf(`parameter "snapshot.stateTable": record the slot's tables: %s`, err)
	}
	return true, nil
}

// saveTablesCovered records that the first snapshot covers every table,
// unless the state table could not be created (saveFirstSnapshot has said
// why).
func (s *Source) saveTablesCovered(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, s.cfg.URL)
	if err != nil {
		return s.errorf("connect to PostgreSQL to record the snapshot's tables: %s", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.stateIdent).Scan(&exists); err != nil || !exists {
		return nil
	}
	state := map[string]tableState{}
	for _, t := range s.catalog.tables {
		state[t.ident] = tableState{Done: true}
	}
	_, err = s.saveTableStates(ctx, conn, state)
	return err
}
