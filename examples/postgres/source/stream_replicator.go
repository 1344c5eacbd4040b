package source

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// replicator owns a replication connection's stream: it turns pgoutput
// messages into records, queues them a transaction at a time, and tells
// the server what is confirmed. Its state is in its fields, which only
// the reader's goroutine touches; receive's loop hands each message to
// received, and each kind of change has a method of its own.
type replicator struct {
	s          *Source
	relations  map[uint32]*relation
	pending    []sdk.Record // the current transaction's records not yet queued
	nextStatus time.Time    // when the next status update is due
	arrival    time.Time    // when the message being handled came: its records' read time

	// The transaction being decoded.
	inTx       bool
	commitLSN  pglogrepl.LSN // its commit LSN
	firstLSN   pglogrepl.LSN // its first LSN
	commitTime time.Time     // when it committed
	index      int           // the next change's index in it
	skip       int           // changes up to this index were acked before a restart; -1: none, MaxInt: all
	at         pglogrepl.LSN // the LSN of the message being handled
}

// receive reads the stream until ctx ends, telling the server every
// statusInterval (and whenever it asks) which LSN it may recycle WAL up
// to.
func (r *replicator) receive(ctx context.Context) error {
	s := r.s
	defer r.status(context.WithoutCancel(ctx)) // the last acks, before the connection closes

	// Receiving waits on the socket's read deadline rather than on a
	// context per message, which would cost a goroutine and a timer per
	// change; cancelling ctx moves the deadline to now.
	nc := s.repl.Conn()
	defer context.AfterFunc(ctx, func() { _ = nc.SetReadDeadline(time.Now()) })()
	defer nc.SetReadDeadline(time.Time{})
	// The clock is read once a message, as it comes (and after a wait
	// that timed out); a change's record takes that reading as its read
	// time.
	r.arrival = time.Now()
	r.nextStatus = r.arrival.Add(s.statusInterval)
	var deadline time.Time
	for {
		if !r.arrival.Before(r.nextStatus) {
			if err := r.status(ctx); err != nil {
				return err
			}
			r.nextStatus = r.arrival.Add(s.statusInterval)
		}
		if !deadline.Equal(r.nextStatus) {
			deadline = r.nextStatus
			_ = nc.SetReadDeadline(deadline)
		}
		if ctx.Err() != nil {
			return nil
		}
		msg, err := s.repl.ReceiveMessage(context.Background())
		r.arrival = time.Now()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			var netErr net.Error
			if errors.As(err, &netErr) && netErr.Timeout() {
				continue
			}
			return s.errorf("receive changes: %s", err)
		}
		if err := r.received(ctx, msg); err != nil {
			return err
		}
	}
}

// received handles a message of the replication connection: a keepalive,
// which may ask for a status update, WAL data, or an error.
func (r *replicator) received(ctx context.Context, msg pgproto3.BackendMessage) error {
	switch msg := msg.(type) {
	case *pgproto3.CopyData:
		if len(msg.Data) == 0 {
			return nil
		}
		switch msg.Data[0] {
		case pglogrepl.PrimaryKeepaliveMessageByteID:
			ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(msg.Data[1:])
			if err != nil {
				return fmt.Errorf("parse a keepalive message: %w", err)
			}
			r.idle(ka.ServerWALEnd)
			if ka.ReplyRequested {
				r.nextStatus = time.Time{}
			}
		case pglogrepl.XLogDataByteID:
			xld, err := pglogrepl.ParseXLogData(msg.Data[1:])
			if err != nil {
				return fmt.Errorf("parse a WAL message: %w", err)
			}
			r.at = xld.WALStart
			return r.handle(ctx, xld.WALData)
		}
	case *pgproto3.ErrorResponse:
		return r.s.errorf("logical replication: %s", pgconn.ErrorResponseToPgError(msg))
	}
	return nil
}

// handle decodes one pgoutput message. The snapshot engine sees every
// message first (engine_watermark.go).
func (r *replicator) handle(ctx context.Context, data []byte) error {
	msg, err := pglogrepl.Parse(data)
	if err != nil {
		return fmt.Errorf("decode a pgoutput message: %w", err)
	}
	if e := r.s.engine; e != nil {
		if err := e.observe(ctx, r, msg); err != nil {
			return err
		}
	}
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		rel, err := r.newRelation(ctx, m, r.relations[m.RelationID])
		if err != nil {
			return err
		}
		r.relations[m.RelationID] = rel
	case *pglogrepl.BeginMessage:
		r.begin(m)
	case *pglogrepl.CommitMessage:
		r.inTx = false
		return r.queuePending(ctx)
	case *pglogrepl.InsertMessage:
		if rel := r.relation(m.RelationID); rel != nil {
			if err := r.insert(ctx, rel, m); err != nil {
				return err
			}
		}
	case *pglogrepl.UpdateMessage:
		if rel := r.relation(m.RelationID); rel != nil {
			return r.update(ctx, rel, m)
		}
	case *pglogrepl.DeleteMessage:
		if rel := r.relation(m.RelationID); rel != nil {
			r.delete(rel, m)
		}
	}
	if len(r.pending) >= 1000 {
		return r.queuePending(ctx)
	}
	return nil
}

// begin starts a transaction: its changes up to the last one acked before
// a restart are skipped.
func (r *replicator) begin(m *pglogrepl.BeginMessage) {
	r.inTx, r.commitLSN, r.index, r.skip = true, m.FinalLSN, 0, -1
	if skip := r.s.from.skip; skip.LSN != "" {
		switch lsn := skip.lsn(); {
		case m.FinalLSN == lsn:
			r.skip = skip.Index
		case m.FinalLSN < lsn: // acked before the restart
			r.skip = math.MaxInt
		}
	}
	r.commitTime, r.firstLSN = m.CommitTime, r.at // a BEGIN comes at the transaction's first LSN
}

// insert emits a create.
func (r *replicator) insert(ctx context.Context, rel *relation, m *pglogrepl.InsertMessage) error {
	after := rel.data(m.Tuple)
	if err := r.followTypes(ctx, rel, after); err != nil {
		return err
	}
	r.emit(rel, sdk.OperationCreate, rel.key(after), nil, after)
	return nil
}

// update emits an update, with the TOASTed values it leaves unchanged
// filled in while its table's snapshot is read (fillUnread).
func (r *replicator) update(ctx context.Context, rel *relation, m *pglogrepl.UpdateMessage) error {
	var before sdk.Data
	after := rel.data(m.NewTuple)
	switch m.OldTupleType {
	case pglogrepl.UpdateMessageTupleTypeOld:
		old := rel.data(m.OldTuple)
		rel.fillFromOld(m.NewTuple, after, old)
		before = old
	case pglogrepl.UpdateMessageTupleTypeKey:
		before = rel.key(rel.data(m.OldTuple)) // the key changed: the old key
	}
	if err := r.followTypes(ctx, rel, after); err != nil {
		return err
	}
	if err := r.s.engine.fillUnread(ctx, rel, m.NewTuple, after, r.emits(rel)); err != nil {
		return err
	}
	r.emit(rel, sdk.OperationUpdate, rel.key(after), before, after)
	return nil
}

// delete emits a delete.
func (r *replicator) delete(rel *relation, m *pglogrepl.DeleteMessage) {
	old := rel.data(m.OldTuple)
	var before sdk.Data
	if m.OldTupleType == pglogrepl.DeleteMessageTupleTypeOld {
		before = old
	}
	r.emit(rel, sdk.OperationDelete, rel.key(old), before, nil)
}

// relation returns the relation of a change to one of the source's tables,
// nil for another table.
func (r *replicator) relation(id uint32) *relation {
	rel := r.relations[id]
	if rel == nil || rel.table == nil {
		return nil
	}
	return rel
}

// emits reports whether the transaction's next change, to rel, becomes a
// record: not if it was acked before a restart, or if its table's chunks
// carry it (engine_versions.go).
func (r *replicator) emits(rel *relation) bool {
	return r.index > r.skip && !r.s.engine.chunked(rel.table, r.commitLSN)
}

// emit adds the record of the transaction's next change to the pending
// ones, unless it is left out (emits). The record is read when its message
// came, not when its transaction began: a large transaction's changes come
// over a while.
func (r *replicator) emit(rel *relation, op sdk.Operation, key, before, after sdk.Data) {
	emits, i := r.emits(rel), r.index
	r.index++
	if !emits {
		return
	}
	md := sdk.Metadata{sdk.MetadataCollection: rel.table.collection, sdk.MetadataReadAt: strconv.FormatInt(r.arrival.UnixNano(), 10), pg.ColumnsKey: rel.meta}
	if rel.types != nil && rel.types.meta != "" {
		md[pg.TypesKey] = rel.types.meta
	}
	r.pending = append(r.pending, sdk.Record{
		Position:  cdcPosition(r.commitLSN, i),
		Operation: op,
		Metadata:  md,
		Key:       key,
		Payload:   sdk.Change{Before: before, After: after},
	})
}

// queuePending queues the pending records, keeping the connection alive
// while the records queued before wait to be taken.
func (r *replicator) queuePending(ctx context.Context) error {
	if len(r.pending) == 0 {
		return nil
	}
	recs := r.pending
	r.pending = nil
	acks := &r.s.acks
	acks.lastCommit.Store(r.commitTime.UnixNano())
	acks.backlog.queued(r.commitLSN, r.firstLSN, len(recs))
	acks.queued.Add(int64(len(recs)))
	if err := r.s.q.put(ctx, recs, r.s.statusInterval, func() error { return r.status(ctx) }); err != nil {
		acks.queued.Add(-int64(len(recs))) // not queued: they come again after a reconnection
		return err
	}
	r.s.from.queued = position{LSN: r.commitLSN.String(), Index: r.index - 1}
	return nil
}

// idle confirms the server's WAL end when every change read has been acked
// and no transaction is open: nothing before it is owed to anyone, and
// without this a slot whose tables see no writes would keep WAL forever.
func (r *replicator) idle(walEnd pglogrepl.LSN) {
	if !r.inTx && len(r.pending) == 0 && r.s.acks.unacked() == 0 {
		r.s.acks.confirm(r.s.capped(uint64(walEnd)))
	}
}

// status tells the server the LSN up to which changes are acked.
func (r *replicator) status(ctx context.Context) error {
	lsn := pglogrepl.LSN(r.s.acks.confirmed.Load())
	if err := pglogrepl.SendStandbyStatusUpdate(ctx, r.s.repl, pglogrepl.StandbyStatusUpdate{WALWritePosition: lsn}); err != nil {
		return r.s.errorf("send a status update to PostgreSQL: %s", err)
	}
	return nil
}
