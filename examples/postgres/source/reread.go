package source

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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

// A table an execute-snapshot signal names is read again as an added
// table is (added.go): its state is reset, so its chunks start from its
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
// adder's state and tables to read, saved before the adder takes them.
type signalPlan struct {
	a     *adder
	lsn   pglogrepl.LSN // the signals' commit LSN
	state map[string]tableState
	todo  []*sourceTable
	view  string // the snapshot a table read again leaves newer versions out by
}

// listenForSignals makes an adder that reads nothing until a signal asks,
// when the start left none. A signal's read that a restart interrupted
// (the state row has a table not done, or a last chunk that may not be
// acknowledged) goes on as startAdding has it: a source resumed from a
// position of its first snapshot streams from the slot's confirmed LSN,
// before the signal, which it does not apply again.
func (s *Source) listenForSignals(ctx context.Context, confirmed pglogrepl.LSN) error {
	if s.signals == nil || s.adder != nil {
		return nil
	}
	state, ok, err := s.loadTableStates(ctx)
	if err != nil {
		return err
	}
	if !ok {
		state = map[string]tableState{}
	}
	a := &adder{s: s, state: state, byID: map[string]*sourceTable{}, windows: map[string]*replayed{}}
	for _, t := range s.catalog.tables {
		a.byID[t.ident] = t
		st, known := state[t.ident]
		if !known {
			state[t.ident] = tableState{Done: true}
		} else if !st.Done {
			a.todo = append(a.todo, t)
		}
	}
	s.adder = a
	if err := s.startAdding(ctx, confirmed); err != nil {
		return err
	}
	if s.adder == nil { // nothing to go on with
		a.started, a.run, s.adder = true, newRunID(), a
	}
	return nil
}

// newRunID is a fresh ID for an Open's watermarks.
func newRunID() string {
	var id [8]byte
	_, _ = rand.Read(id[:])
	return hex.EncodeToString(id[:])
}

// busy reports whether the adder is reading a table, or replaying chunks:
// what it keeps in memory is then lost with the connection.
func (a *adder) busy() bool {
	return a != nil && (!a.started || a.live != nil || len(a.todo) > 0)
}

// applySignals applies the signals of the transaction that commits at lsn,
// in order, and starts reading a table they ask for.
func (a *adder) applySignals(ctx context.Context, lsn pglogrepl.LSN) error {
	sigs := a.s.signals.take()
	if len(sigs) == 0 {
		return nil
	}
	p := &signalPlan{a: a, lsn: lsn, state: maps.Clone(a.state), todo: slices.Clone(a.todo)}
	if err := a.s.conn.QueryRow(ctx, `SELECT txid_current_snapshot()::text`).Scan(&p.view); err != nil {
		return a.s.failedTo("read the snapshot a signal's read starts from", err)
	}
	for _, sig := range sigs {
		p.apply(ctx, sig)
	}
	saved, err := a.s.saveTableStates(ctx, a.s.conn, p.state)
	if err != nil || !saved {
		return err // not saved: saveTableStates said why
	}
	a.state, a.todo = p.state, p.todo
	if a.s.measured && a.started {
		a.progress, a.finished = followSnapshot(ctx, a.s.conn, a.s.metrics, a.todo, 0), 0
	}
	if a.started && a.live == nil {
		return a.next(ctx)
	}
	return nil
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
			t = p.a.byID[pgx.Identifier(parts).Sanitize()]
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
