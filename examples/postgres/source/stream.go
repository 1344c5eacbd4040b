package source

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// statusInterval is how often the source tells the server, while
// streaming, which LSN it has processed; the server ends a replication
// connection it has not heard from for wal_sender_timeout (60s by default).
var statusInterval = time.Second

// streamFrom is where replication starts, and which changes it skips: the
// server sends again changes the source handed out before, which keep
// their positions, so those up to skip are left out.
type streamFrom struct {
	lsn    pglogrepl.LSN // where replication starts; 0: where the slot is
	skip   position      // it and the changes before it are skipped: the last acked at Open, the last queued after a reconnection
	queued position      // the last change queued
}

// stream reads changes through logical replication from s.from.lsn (or
// where the slot is) until ctx ends (stream_replicator.go).
func (s *Source) stream(ctx context.Context) error {
	if err := s.startReplication(ctx); err != nil {
		return err
	}
	s.streaming(ctx)
	r := &replicator{s: s, relations: map[uint32]*relation{}}
	return r.receive(ctx)
}

// startReplication starts logical replication from the slot, with the
// messages that carry the snapshot's watermarks while there is a snapshot
// engine.
func (s *Source) startReplication(ctx context.Context) error {
	args := []string{"proto_version '1'", "publication_names '" + s.cfg.Publication.Name + "'"}
	if s.engine != nil {
		args = append(args, "messages 'true'") // the snapshot's watermarks (engine_watermark.go)
	}
	err := pglogrepl.StartReplication(ctx, s.repl, s.cfg.Slot.Name, s.from.lsn, pglogrepl.StartReplicationOptions{
		Mode:       pglogrepl.LogicalReplication,
		PluginArgs: args,
	})
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55006" {
			return s.whoHoldsSlot(ctx, pgErr)
		}
		if errors.As(err, &pgErr) && pgErr.Code == "55000" {
			return s.lostWhileRunning(ctx, err)
		}
		return s.errorf("start logical replication: %s", err)
	}
	return nil
}

// whoHoldsSlot is the error for a slot that another server process held
// when replication was to start (55006): who holds it, asked on a
// connection of its own (the source's may be busy with the snapshot).
func (s *Source) whoHoldsSlot(ctx context.Context, pgErr *pgconn.PgError) error {
	conn, err := pgx.Connect(ctx, s.cfg.URL)
	if err != nil {
		return fmt.Errorf("replication slot %s is in use by another connection: only one reader per slot; stop the other reader or choose another slot.name (%s)", s.cfg.Slot.Name, pgErr.Message)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var pid *int32
	_ = conn.QueryRow(ctx, `SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1`, s.cfg.Slot.Name).Scan(&pid)
	return slotHeld(ctx, conn, s.cfg.Slot.Name, pid)
}
