package source

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// relation is a replicated table as its latest pgoutput Relation message
// describes it: the columns its tuples carry, in order.
type relation struct {
	table *sourceTable
	names []string
	oids  []uint32
	keys  []string          // the primary key's column names
	meta  string            // the columns as its records describe them (columns.go)
	was   map[string]string // the columns renamed while streaming: new name → first name
	types *userTypes        // the user types its columns use (usertypes.go)
}

// data decodes a tuple. A TOASTed value that did not change is not sent:
// its column is left out, so that a destination does not overwrite it.
func (r *relation) data(t *pglogrepl.TupleData) sdk.StructuredData {
	d := make(sdk.StructuredData, len(t.Columns))
	for i, c := range t.Columns {
		if i >= len(r.names) {
			break
		}
		switch c.DataType {
		case pglogrepl.TupleDataTypeNull:
			d[r.names[i]] = nil
		case pglogrepl.TupleDataTypeText:
			d[r.names[i]] = value(r.oids[i], c.Data)
		}
	}
	return d
}

// key picks the primary key's columns out of d.
func (r *relation) key(d sdk.StructuredData) sdk.StructuredData {
	k := make(sdk.StructuredData, len(r.keys))
	for _, name := range r.keys {
		k[name] = d[name]
	}
	return k
}

// keyText returns the text of the primary key's values in t, in key order;
// nil when one of them is not in t (an unchanged TOASTed value).
func (r *relation) keyText(t *pglogrepl.TupleData) []string {
	out := make([]string, 0, len(r.keys))
	for _, name := range r.keys {
		i := slices.Index(r.names, name)
		if i < 0 || i >= len(t.Columns) || t.Columns[i].DataType != pglogrepl.TupleDataTypeText {
			return nil
		}
		out = append(out, string(t.Columns[i].Data))
	}
	return out
}

// stream reads changes through logical replication from s.start (or where
// the slot is) until ctx ends, telling the server every statusInterval
// (and whenever it asks) which LSN it may recycle WAL up to.
func (s *Source) stream(ctx context.Context) error {
	args := []string{"proto_version '1'", "publication_names '" + s.cfg.Publication.Name + "'"}
	if s.adder != nil {
		args = append(args, "messages 'true'") // the watermarks of added tables (added.go)
	}
	err := pglogrepl.StartReplication(ctx, s.repl, s.cfg.Slot.Name, s.start, pglogrepl.StartReplicationOptions{
		Mode:       pglogrepl.LogicalReplication,
		PluginArgs: args,
	})
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55006" {
			return s.slotHeld(ctx, pgErr)
		}
		return s.errorf("start logical replication: %s", err)
	}
	s.streaming(ctx)
	r := &replicator{s: s, relations: map[uint32]*relation{}}
	defer r.status(context.WithoutCancel(ctx)) // the last acks, before the connection closes

	// Receiving waits on the socket's read deadline rather than on a
	// context per message, which would cost a goroutine and a timer per
	// change; cancelling ctx moves the deadline to now.
	nc := s.repl.Conn()
	defer context.AfterFunc(ctx, func() { _ = nc.SetReadDeadline(time.Now()) })()
	defer nc.SetReadDeadline(time.Time{})
	next := time.Now().Add(s.statusInterval)
	var deadline time.Time
	for {
		if !time.Now().Before(next) {
			if err := r.status(ctx); err != nil {
				return err
			}
			next = time.Now().Add(s.statusInterval)
		}
		if !deadline.Equal(next) {
			deadline = next
			_ = nc.SetReadDeadline(deadline)
		}
		if ctx.Err() != nil {
			return nil
		}
		msg, err := s.repl.ReceiveMessage(context.Background())
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
		switch msg := msg.(type) {
		case *pgproto3.CopyData:
			if len(msg.Data) == 0 {
				continue
			}
			switch msg.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(msg.Data[1:])
				if err != nil {
					return fmt.Errorf("parse a keepalive message: %w", err)
				}
				r.idle(ka.ServerWALEnd)
				if ka.ReplyRequested {
					next = time.Time{}
				}
			case pglogrepl.XLogDataByteID:
				xld, err := pglogrepl.ParseXLogData(msg.Data[1:])
				if err != nil {
					return fmt.Errorf("parse a WAL message: %w", err)
				}
				r.at = xld.WALStart
				if err := r.handle(ctx, xld.WALData); err != nil {
					return err
				}
			}
		case *pgproto3.ErrorResponse:
			return s.errorf("logical replication: %s", pgconn.ErrorResponseToPgError(msg))
		}
	}
}

// replicator turns pgoutput messages into records.
type replicator struct {
	s         *Source
	relations map[uint32]*relation
	pending   []sdk.Record // the current transaction's records not yet queued

	inTx   bool
	lsn    pglogrepl.LSN // the current transaction's commit LSN
	index  int           // the next change's index in it
	skip   int           // changes up to this index were acked before a restart; -1: none, MaxInt: all
	now    string        // opencdc.readAt of the current transaction's records
	commit time.Time     // when the current transaction committed
	first  pglogrepl.LSN // the current transaction's first LSN
	at     pglogrepl.LSN // the LSN of the message being handled
}

// handle decodes one pgoutput message.
func (r *replicator) handle(ctx context.Context, data []byte) error {
	msg, err := pglogrepl.Parse(data)
	if err != nil {
		return fmt.Errorf("decode a pgoutput message: %w", err)
	}
	if a := r.s.adder; a != nil {
		if err := a.observe(ctx, r, msg); err != nil {
			return err
		}
	}
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		rel := &relation{table: r.s.byOID[m.RelationID]}
		for _, c := range m.Columns {
			rel.names = append(rel.names, c.Name)
			rel.oids = append(rel.oids, c.DataType)
		}
		if rel.table != nil {
			rel.keys = rel.table.keyNames()
			var err error
			if rel.meta, rel.was, err = r.relationColumns(ctx, rel.table, m, r.relations[m.RelationID]); err != nil {
				return err
			}
			if rel.types, err = describeTypes(ctx, r.s.conn, rel.names, rel.oids); err != nil {
				return r.s.failedTo("read the user types of the columns of table "+rel.table.ident, err)
			}
		}
		r.relations[m.RelationID] = rel
	case *pglogrepl.BeginMessage:
		r.inTx, r.lsn, r.index, r.skip = true, m.FinalLSN, 0, -1
		if res := r.s.resume; res != nil && m.FinalLSN >= res.until {
			r.s.resume = nil // past the fresh snapshot: its changes are whole again
		}
		if r.s.skip.LSN != "" {
			switch skip := r.s.skip.lsn(); {
			case m.FinalLSN == skip:
				r.skip = r.s.skip.Index
			case m.FinalLSN < skip: // acked before the restart
				r.skip = math.MaxInt
			}
		}
		r.now = strconv.FormatInt(time.Now().UnixNano(), 10)
		r.commit, r.first = m.CommitTime, r.at // a BEGIN comes at the transaction's first LSN
	case *pglogrepl.CommitMessage:
		r.inTx = false
		return r.queuePending(ctx)
	case *pglogrepl.InsertMessage:
		if rel := r.relation(m.RelationID); rel != nil {
			r.markChanged(rel, m.Tuple)
			after := rel.data(m.Tuple)
			if err := r.followTypes(ctx, rel, after); err != nil {
				return err
			}
			r.emit(rel, sdk.OperationCreate, rel.key(after), nil, after)
		}
	case *pglogrepl.UpdateMessage:
		if rel := r.relation(m.RelationID); rel != nil {
			return r.update(ctx, rel, m)
		}
	case *pglogrepl.DeleteMessage:
		if rel := r.relation(m.RelationID); rel != nil {
			r.markChanged(rel, m.OldTuple)
			old := rel.data(m.OldTuple)
			var before sdk.Data
			if m.OldTupleType == pglogrepl.DeleteMessageTupleTypeOld {
				before = old
			}
			r.emit(rel, sdk.OperationDelete, rel.key(old), before, nil)
		}
	}
	if len(r.pending) >= 1000 {
		return r.queuePending(ctx)
	}
	return nil
}

// update emits an update, with the values it leaves unchanged filled in
// where a resumed snapshot calls for it (fillUnchanged).
func (r *replicator) update(ctx context.Context, rel *relation, m *pglogrepl.UpdateMessage) error {
	oldTuple := m.NewTuple
	if m.OldTupleType != 0 {
		oldTuple = m.OldTuple
	}
	var before sdk.Data
	switch m.OldTupleType {
	case pglogrepl.UpdateMessageTupleTypeOld:
		before = rel.data(m.OldTuple)
	case pglogrepl.UpdateMessageTupleTypeKey:
		before = rel.key(rel.data(m.OldTuple)) // the key changed: the old key
	}
	after := rel.data(m.NewTuple)
	if err := r.followTypes(ctx, rel, after); err != nil {
		return err
	}
	if err := r.fillUnchanged(ctx, rel, oldTuple, m.NewTuple, after, r.index > r.skip); err != nil {
		return err
	}
	if err := r.s.adder.fillUnread(ctx, rel, m.NewTuple, after, r.index > r.skip); err != nil {
		return err
	}
	r.emit(rel, sdk.OperationUpdate, rel.key(after), before, after)
	return nil
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

func (r *replicator) emit(rel *relation, op sdk.Operation, key sdk.StructuredData, before, after sdk.Data) {
	i := r.index
	r.index++
	if i <= r.skip {
		return
	}
	md := sdk.Metadata{"opencdc.collection": rel.table.collection, "opencdc.readAt": r.now, pg.ColumnsKey: rel.meta}
	if rel.types != nil && rel.types.meta != "" {
		md[pg.TypesKey] = rel.types.meta
	}
	r.pending = append(r.pending, sdk.Record{
		Position:  cdcPosition(r.lsn, i),
		Operation: op,
		Metadata:  md,
		Key:       key,
		Payload:   sdk.Change{Before: before, After: after},
	})
}

// queuePending queues the pending records, keeping the connection alive while the
// queue is full.
func (r *replicator) queuePending(ctx context.Context) error {
	if len(r.pending) == 0 {
		return nil
	}
	recs := r.pending
	r.pending = nil
	r.s.lastCommit.Store(r.commit.UnixNano())
	r.s.backlog.queued(r.lsn, r.first, len(recs))
	r.s.produced.Add(int64(len(recs)))
	if err := r.s.q.put(ctx, recs, r.s.statusInterval, func() error { return r.status(ctx) }); err != nil {
		r.s.produced.Add(-int64(len(recs))) // not queued: they come again after a reconnection
		return err
	}
	r.s.emitted = position{LSN: r.lsn.String(), Index: r.index - 1}
	return nil
}

// idle confirms the server's WAL end when every change read has been acked
// and no transaction is open: nothing before it is owed to anyone, and
// without this a slot whose tables see no writes would hold WAL forever.
func (r *replicator) idle(walEnd pglogrepl.LSN) {
	if !r.inTx && len(r.pending) == 0 && r.s.acked.Load() == r.s.produced.Load() {
		raise(&r.s.confirmed, r.s.capped(uint64(walEnd)))
	}
}

// status tells the server the LSN up to which changes are acked.
func (r *replicator) status(ctx context.Context) error {
	lsn := pglogrepl.LSN(r.s.confirmed.Load())
	if err := pglogrepl.SendStandbyStatusUpdate(ctx, r.s.repl, pglogrepl.StandbyStatusUpdate{WALWritePosition: lsn}); err != nil {
		return r.s.errorf("send a status update to PostgreSQL: %s", err)
	}
	return nil
}

// slotHeld is the error for a slot that another server process held when
// replication was to start (55006): who holds it, asked on a connection
// of its own (the source's may be busy with the snapshot).
func (s *Source) slotHeld(ctx context.Context, pgErr *pgconn.PgError) error {
	conn, err := pgx.Connect(ctx, s.cfg.URL)
	if err != nil {
		return fmt.Errorf("replication slot %s is in use by another connection: only one reader per slot; stop the other reader or choose another slot.name (%s)", s.cfg.Slot.Name, pgErr.Message)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var pid *int32
	_ = conn.QueryRow(ctx, `SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1`, s.cfg.Slot.Name).Scan(&pid)
	return slotHeld(ctx, conn, s.cfg.Slot.Name, pid)
}
