package source

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
)

// streamReconnecting streams changes as [Source.stream] does and, when the
// replication connection or the query connection breaks, reconnects both
// and starts replication again from the LSN confirmed to the server, up to
// reconnect.timeout after the connection was lost. The server sends again
// the changes after it, some of them already queued: those at or before
// the last change queued are skipped (positions are deterministic), so
// that no record is handed out twice and none is lost. A run that
// snapshots tables does not reconnect.
func (s *Source) streamReconnecting(ctx context.Context) error {
	timeout := s.cfg.Reconnect.Timeout
	for {
		err := s.stream(ctx)
		// A run that snapshots tables keeps the chunks it reads in
		// memory, with their watermarks; it fails, and the restarted
		// source resumes them from its state.
		if err == nil || ctx.Err() != nil || timeout <= 0 || s.engine.busy() || !pg.ConnectionLost(err) {
			return err
		}
		deadline, began := s.lost.Lost(err.Error(), timeout)
		if began {
			sdk.Logger(ctx).Warn(fmt.Sprintf("postgres: lost the connection to PostgreSQL while streaming changes: %s; reconnecting for up to %s (parameter %q)", err, timeout, pg.ReconnectParam))
		}
		if err := s.reconnect(ctx, deadline); err != nil {
			return err
		}
	}
}

// reconnect closes the source's connections and opens them again, waiting
// between attempts up to deadline; it then sets where replication starts
// again and what it skips. A slot that is gone fails at once: the changes
// it kept are gone with it.
func (s *Source) reconnect(ctx context.Context, deadline time.Time) error {
	s.closeConnections(ctx)
	var b pg.Backoff
	for {
		if !b.Sleep(ctx, deadline) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return pg.GaveUp(s.cfg.Reconnect.Timeout, s.lost.LastReason())
		}
		err := s.connectAgain(ctx)
		if err == nil {
			break
		}
		s.closeConnections(ctx)
		if errors.Is(err, errSlotGone) {
			return err
		}
		s.lost.Lost(pg.Reason(err, s.cfg.URL), s.cfg.Reconnect.Timeout)
	}
	// What Conduit acknowledged is confirmed; what it was handed and has
	// not acknowledged comes again, and is skipped up to the last change
	// queued.
	s.from.lsn = pglogrepl.LSN(s.acks.confirmed.Load())
	if s.from.queued.LSN != "" {
		s.from.skip = s.from.queued
	}
	return nil
}

var errSlotGone = errors.New("the replication slot is gone")

// connectAgain opens the query connection, claims the slot on it and
// opens the replication connection, as Open does.
func (s *Source) connectAgain(ctx context.Context) error {
	var err error
	if s.conn, err = connectQuery(ctx, s.cfg.URL); err != nil {
		return err
	}
	slot, err := s.claimSlot(ctx)
	if err != nil {
		return err
	}
	if !slot.exists {
		return fmt.Errorf("%w: replication slot %s no longer exists, so the changes after LSN %s are gone: to start over with a fresh snapshot, reset the pipeline's position (e.g. recreate the source connector)", errSlotGone, s.cfg.Slot.Name, pglogrepl.LSN(s.acks.confirmed.Load()))
	}
	s.repl, err = connectReplication(ctx, s.cfg.URL)
	return err
}

// closeConnections closes the query and replication connections, without
// waiting long for a server that is gone.
func (s *Source) closeConnections(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if s.repl != nil {
		_ = s.repl.Close(ctx)
		s.repl = nil
	}
	if s.conn != nil {
		_ = s.conn.Close(ctx)
		s.conn = nil
	}
}

// streaming notes that replication has started: after a lost connection,
// it logs how long reconnecting took.
func (s *Source) streaming(ctx context.Context) {
	if took := s.lost.Restored(); took > 0 {
		sdk.Logger(ctx).Info(fmt.Sprintf("postgres: reconnected to PostgreSQL after %s; replication resumes after LSN %s", took.Round(time.Millisecond), s.from.lsn))
	}
}
