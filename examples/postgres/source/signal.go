package source

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// Signals, as Debezium has them: rows inserted into signal.table while the
// source streams ask it to act. The table is in the source's publication,
// so its inserts come in the stream, in commit order with the changes, and
// never become records. An execute-snapshot signal reads the tables it
// names again, the way tables added to `tables` are read (engine.go): in
// chunks between watermarks, while changes stream. A stop-snapshot signal
// ends such a read.
//
// A signal is applied when its transaction's commit comes in the stream,
// to the state row of snapshot.stateTable (engine_state.go) before anything
// after it is confirmed, so a restart finds it there (a read in progress
// goes on from where it was) or streams it again. Each table's state keeps
// the commit LSN of the last signal applied to it (tableState.Signal): a
// signal streamed again after a restart, at or before that LSN, is not
// applied twice.

// signals is the signal table and the signals of the transaction being
// decoded.
type signals struct {
	oid          uint32
	schema, name string    // as the catalog spells them
	ident        string    // quoted and schema-qualified
	columns      []string  // as the stream's relation message names them
	pending      []request // the current transaction's signals, in order
}

// request is a signal: a row inserted into the signal table.
type request struct {
	id, kind, data string
}

// signalColumns are the columns a signal table has, Debezium's.
var signalColumns = []string{"id", "type", "data"}

// checkSignalConfig refuses signal.table where its reads could not be
// resumed after a restart.
func checkSignalConfig(cfg Config) error {
	if cfg.Signal.Table == "" || cfg.Snapshot.Mode == "initial" {
		return nil
	}
	return fmt.Errorf(`parameter "signal.table": signals need snapshot.mode initial, not %s: a table read again is resumed after a restart from the slot's row of snapshot.stateTable, which only a source that snapshots keeps; set snapshot.mode to initial or leave signal.table empty`, cfg.Snapshot.Mode)
}

// prepareSignals finds the signal table, creating it when missing, and
// checks its columns.
func (s *Source) prepareSignals(ctx context.Context) error {
	if s.cfg.Signal.Table == "" {
		return nil
	}
	parts, err := pg.SplitName(s.cfg.Signal.Table)
	if err != nil {
		return fmt.Errorf(`parameter "signal.table": %w`, err)
	}
	sg := &signals{ident: pgx.Identifier(parts).Sanitize()}
	var oid *uint32
	if err := s.conn.QueryRow(ctx, `SELECT to_regclass($1)::oid`, sg.ident).Scan(&oid); err != nil {
		return s.failedTo(`parameter "signal.table": look up table `+sg.ident, err)
	}
	if oid == nil {
		_, err := s.conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+sg.ident+` (id text PRIMARY KEY, type text NOT NULL, data text)`)
		if err == nil {
			err = s.conn.QueryRow(ctx, `SELECT to_regclass($1)::oid`, sg.ident).Scan(&oid)
		}
		if err != nil {
			return s.failedTo(`parameter "signal.table": create table `+sg.ident+` (id text PRIMARY KEY, type text NOT NULL, data text) (create it, or grant the role CREATE on its schema)`, err)
		}
		sdk.Logger(ctx).Info(fmt.Sprintf("postgres: created the signal table %s (parameter \"signal.table\")", sg.ident))
	}
	sg.oid = *oid
	if err := s.conn.QueryRow(ctx, `SELECT n.nspname::text, c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1`, sg.oid).Scan(&sg.schema, &sg.name); err != nil {
		return s.failedTo(`parameter "signal.table": look up table `+sg.ident, err)
	}
	if err := sg.checkColumns(ctx, s.conn); err != nil {
		return err
	}
	s.signals = sg
	return nil
}

// checkColumns checks that the table has the signal columns.
func (sg *signals) checkColumns(ctx context.Context, conn *pgx.Conn) error {
	rows, _ := conn.Query(ctx, `SELECT attname::text FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped`, sg.oid)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf(`parameter "signal.table": read the columns of %s: %w`, sg.ident, err)
	}
	for _, c := range signalColumns {
		if !slices.Contains(names, c) {
			return fmt.Errorf(`parameter "signal.table": table %s has no column %q; a signal table has Debezium's columns id (text, primary key), type (text) and data (text): ALTER TABLE %s ADD COLUMN %s text, or name another table`, sg.ident, c, sg.ident, c)
		}
	}
	return nil
}

// leaveOut removes the signal table from the tables read: its rows are
// signals, not data.
func (sg *signals) leaveOut(tables []*sourceTable) []*sourceTable {
	if sg == nil {
		return tables
	}
	return slices.DeleteFunc(tables, func(t *sourceTable) bool { return t.oid == sg.oid })
}

// published is the tables the publication needs: the tables read and the
// signal table.
func (sg *signals) published(tables []*sourceTable) []*sourceTable {
	if sg == nil {
		return tables
	}
	return append(slices.Clone(tables), &sourceTable{oid: sg.oid, schema: sg.schema, name: sg.name, ident: sg.ident})
}

// observe follows the stream for signals: the signal table's columns, and
// the rows inserted into it in the transaction being decoded.
func (sg *signals) observe(msg pglogrepl.Message) {
	if sg == nil {
		return
	}
	switch m := msg.(type) {
	case *pglogrepl.BeginMessage:
		sg.pending = nil
	case *pglogrepl.RelationMessage:
		if m.RelationID == sg.oid {
			sg.columns = sg.columns[:0]
			for _, c := range m.Columns {
				sg.columns = append(sg.columns, c.Name)
			}
		}
	case *pglogrepl.InsertMessage:
		if m.RelationID == sg.oid && m.Tuple != nil {
			sg.pending = append(sg.pending, sg.decode(m.Tuple))
		}
	}
}

// decode reads a signal from an inserted row.
func (sg *signals) decode(t *pglogrepl.TupleData) request {
	var sig request
	for i, c := range t.Columns {
		if i >= len(sg.columns) || c.DataType != pglogrepl.TupleDataTypeText {
			continue
		}
		switch sg.columns[i] {
		case "id":
			sig.id = string(c.Data)
		case "type":
			sig.kind = string(c.Data)
		case "data":
			sig.data = string(c.Data)
		}
	}
	return sig
}

// take returns the transaction's signals, which its commit applies.
func (sg *signals) take() []request {
	if sg == nil {
		return nil
	}
	sigs := sg.pending
	sg.pending = nil
	return sigs
}

// A table an execute-snapshot signal names is read again as an added
// table is (engine.go): its state is reset, so its chunks start from its
// first key, and its Seen is the snapshot of the moment the signal is
// applied. A row version that snapshot did not see was written by a
// transaction that commits after the signal, whose changes stream: the
// chunks leave it out. So each row there at the signal comes once more,
// as a snapshot record or, if it changes meanwhile, as its changes.

// signalData is a signal's data column, Debezium's JSON.
type signalData struct {
	Collections []string `json:"data-collections"`
	Type        string   `json:"type"`
}

// signalPlan is what the signals of one transaction change: a copy of the
// engine's state and tables to read, saved before the engine takes them.
type signalPlan struct {
	e     *engine
	lsn   pglogrepl.LSN // the signals' commit LSN
	state map[string]tableState
	todo  []*sourceTable
	view  string // the snapshot a table read again leaves newer versions out by
}

// applySignals applies the signals of the transaction that commits at lsn,
// in order, and starts reading a table they ask for.
func (e *engine) applySignals(ctx context.Context, lsn pglogrepl.LSN) error {
	sigs := e.src.signals.take()
	if len(sigs) == 0 {
		return nil
	}
	s := e.src
	p := &signalPlan{e: e, lsn: lsn, state: maps.Clone(e.state), todo: slices.Clone(e.todo)}
	if err := s.conn.QueryRow(ctx, `SELECT txid_current_snapshot()::text`).Scan(&p.view); err != nil {
		return s.failedTo("read the snapshot a signal's read starts from", err)
	}
	for _, sig := range sigs {
		p.apply(ctx, sig)
	}
	if err := s.saveTableStates(ctx, s.conn, p.state); err != nil {
		return err
	}
	e.state, e.todo = p.state, p.todo
	if !e.started {
		return nil
	}
	if s.measured {
		e.progress = followSnapshot(ctx, s.conn, s.metrics, e.todo)
	}
	return e.fill(ctx)
}

// apply applies one signal to the plan; a signal it cannot apply is
// logged and skipped.
func (p *signalPlan) apply(ctx context.Context, sig request) {
	log := sdk.Logger(ctx)
	var d signalData
	if sig.data != "" {
		if err := json.Unmarshal([]byte(sig.data), &d); err != nil {
			log.Warn(fmt.Sprintf(`postgres: signal %q (%s): its data is not JSON (%s): skipped; write e.g. {"data-collections": ["public.t"], "type": "incremental"}`, sig.id, sig.kind, err))
			return
		}
	}
	if d.Type != "" && !strings.EqualFold(d.Type, "incremental") {
		log.Warn(fmt.Sprintf(`postgres: signal %q (%s): type %q is not supported, only "incremental" (chunks read while changes stream): skipped`, sig.id, sig.kind, d.Type))
		return
	}
	switch sig.kind {
	case "execute-snapshot":
		if len(d.Collections) == 0 {
			log.Warn(fmt.Sprintf(`postgres: signal %q (execute-snapshot) names no table: skipped; its data needs {"data-collections": ["schema.table", ...]}`, sig.id))
		}
		for _, t := range p.tables(ctx, sig, d.Collections) {
			p.execute(ctx, sig, t)
		}
	case "stop-snapshot":
		tables := slices.Clone(p.todo)
		if d.Collections != nil {
			tables = p.tables(ctx, sig, d.Collections)
		}
		for _, t := range tables {
			p.stop(ctx, sig, t)
		}
	default:
		log.Warn(fmt.Sprintf(`postgres: signal %q: type %q is not supported (only execute-snapshot and stop-snapshot): skipped`, sig.id, sig.kind))
	}
}

// tables resolves the names of a signal's data-collections among the
// tables read, warning about each one that is not.
func (p *signalPlan) tables(ctx context.Context, sig request, names []string) []*sourceTable {
	var found []*sourceTable
	for _, name := range names {
		parts, err := pg.SplitName(name)
		if err == nil && len(parts) == 1 {
			parts = []string{"public", parts[0]}
		}
		var t *sourceTable
		if err == nil {
			t = p.e.tables[pgx.Identifier(parts).Sanitize()]
		}
		if t == nil {
			sdk.Logger(ctx).Warn(fmt.Sprintf(`postgres: signal %q (%s): table %q is not among the tables read (parameter "tables"): skipped; add it to tables (a table added there is snapshotted anyway) or name it as schema.table`, sig.id, sig.kind, name))
			continue
		}
		found = append(found, t)
	}
	return found
}

// applied reports whether a signal at the plan's LSN has been applied to
// t already, before a restart that streams it again.
func (p *signalPlan) applied(t *sourceTable) bool {
	last, err := pglogrepl.ParseLSN(p.state[t.ident].Signal)
	return err == nil && last >= p.lsn
}

// execute resets t's state so that its chunks start over, and reads it.
func (p *signalPlan) execute(ctx context.Context, sig request, t *sourceTable) {
	if p.applied(t) {
		return
	}
	p.state[t.ident] = tableState{Seen: p.view, Signal: p.lsn.String()}
	if !slices.Contains(p.todo, t) {
		p.todo = append(p.todo, t)
	}
	sdk.Logger(ctx).Info(fmt.Sprintf("postgres: signal %q: table %s is read again, in chunks while changes stream", sig.id, t.ident), "table", t.ident)
}

// stop ends the read of t. Its chunks read before the signal, not all
// acknowledged, are read again after a restart: the slot is confirmed no
// further than their low watermarks, which are before the signal's LSN.
func (p *signalPlan) stop(ctx context.Context, sig request, t *sourceTable) {
	if p.applied(t) {
		return
	}
	reading := slices.Contains(p.todo, t)
	st := p.state[t.ident]
	st.Signal = p.lsn.String()
	if reading {
		st.Done, st.After, st.Low = true, nil, p.lsn.String()
		p.todo = slices.DeleteFunc(p.todo, func(u *sourceTable) bool { return u == t })
		sdk.Logger(ctx).Info(fmt.Sprintf("postgres: signal %q: the read of table %s is stopped", sig.id, t.ident), "table", t.ident)
	}
	p.state[t.ident] = st
}
