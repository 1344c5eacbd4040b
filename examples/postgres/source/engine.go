package source

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// The snapshot engine reads every snapshot — the first copy of the
// tables, tables added to `tables` while the source streams, the tables
// an execute-snapshot signal names, every table again after a lost slot —
// in chunks while the changes of every table stream, as DBLog (Netflix,
// 2020) does: no table lock, and no transaction open longer than one
// chunk's read (engine_chunk.go). Chunks go between watermarks in the stream
// (engine_watermark.go), so that a snapshot record never overwrites a later
// change of its row.
//
// Each row version comes once, from the chunks or from the stream. A
// snapshot taken when a table's read begins splits them (tableState.Seen):
// a row version it did not see was written by a transaction whose changes
// stream, and every chunk leaves it out. For the first copy it is the
// snapshot the replication slot exports, at whose consistent point the
// stream starts; for an added table one exported right after the table
// joined the publication, whose earlier transactions are left out of the
// stream instead (tableState.Consistent, chunked).
//
// The state row of snapshot.stateTable (engine_state.go) keeps, per table, where
// its read is (the key the next chunk starts after), saved by the engine
// when it emits a chunk, before the chunk's rows are queued. Without
// changes to stream (snapshot.mode initial_only) chunks need no
// watermarks, are emitted as read, and each reads the rows as they are
// then; a restart goes on after the position.

// engine is the snapshot engine. The source's reading goroutine owns it:
// it sees each message of the stream before the replicator does
// (observe), plans chunks, and emits them. Each chunk is read by a
// goroutine of its own (readChunk), up to snapshot.parallelism at once.
type engine struct {
	src      *Source
	streamed bool                    // changes stream: chunks go between watermarks; false: snapshot.mode initial_only
	run      string                  // this Open's ID, which its watermarks carry
	tables   map[string]*sourceTable // the tables read, by ident
	state    map[string]tableState   // the state row's tables, by ident (engine_state.go)
	todo     []*sourceTable          // tables whose read is not done, in the order they are read

	started  bool                           // the start marker has come: earlier runs' chunks are replayed
	seq      int                            // the last chunk planned
	inflight []*chunk                       // planned and not yet emitted, in plan order
	replays  map[string]*window             // chunks of earlier runs whose low watermark the stream passed, by chunkID
	xid      uint32                         // the transaction being decoded
	exported map[*sourceTable]pglogrepl.LSN // the consistent point of each table's Seen snapshot, whose chunks carry the changes before it
	perBlock map[*sourceTable]float64       // a keyless table's rows per block, as the planner's statistics have them

	progress  *snapshotProgress
	pins      pins
	replayPin *pin // keeps the slot where it was at Open until the replay is acknowledged
	readers   readers
}

// newEngine is the engine of the tables read, with their state: the
// tables whose state is not done are read.
func (s *Source) newEngine(state map[string]tableState, streamed bool) *engine {
	e := &engine{
		src: s, streamed: streamed, state: state, tables: map[string]*sourceTable{},
		replays: map[string]*window{}, exported: map[*sourceTable]pglogrepl.LSN{}, perBlock: map[*sourceTable]float64{},
		readers: readers{url: s.cfg.URL, idle: make(chan *pgx.Conn, s.cfg.Snapshot.Parallelism)},
	}
	for _, t := range s.catalog.tables {
		e.tables[t.ident] = t
		if st, ok := state[t.ident]; ok && !st.Done {
			e.todo = append(e.todo, t)
		}
	}
	return e
}

// everyTable is a state in which every table read is to be read, against
// the snapshot seen, whose consistent point is consistent.
func (s *Source) everyTable(seen exportedSnapshot) map[string]tableState {
	state := map[string]tableState{}
	for _, t := range s.catalog.tables {
		state[t.ident] = tableState{Seen: seen.view, Consistent: seen.consistent.String()}
	}
	return state
}

// begin starts the engine once the slot is known, if it has tables to
// read or chunks to replay (it reports whether): replication starts at the
// slot's confirmed LSN, pinned there until the replay is acknowledged, and
// a start marker ends the replay. A table without a Seen snapshot gets one
// first.
func (e *engine) begin(ctx context.Context, confirmed pglogrepl.LSN) (bool, error) {
	replay := false
	for ident, st := range e.state {
		low, err := pglogrepl.ParseLSN(st.Low)
		unacked := err == nil && st.Done && low >= confirmed
		replay = replay || unacked
		if t := e.tables[ident]; t != nil && st.End != nil && st.End.CTID != t.keyless() && (unacked || !st.Done) {
			return false, identityChanged(t, st.End.CTID)
		}
	}
	if len(e.todo) == 0 && !replay {
		return false, nil
	}
	if err := e.exportSeen(ctx); err != nil {
		return false, err
	}
	if err := e.noteExported(); err != nil {
		return false, err
	}
	e.run = newRunID()
	e.src.from.lsn = 0
	e.replayPin = e.pins.add(uint64(confirmed))
	_, err := e.writeWatermark(ctx, e.src.conn, watermark{Kind: "start"})
	return true, err
}

// listen starts an engine that has nothing to read until a signal asks.
func (e *engine) listen() { e.started, e.run = true, newRunID() }

// newRunID is a fresh ID for an Open's watermarks.
func newRunID() string {
	var id [8]byte
	_, _ = rand.Read(id[:])
	return hex.EncodeToString(id[:])
}

// busy reports whether the engine is reading a table or replaying chunks:
// what it keeps in memory is then lost with the connection.
func (e *engine) busy() bool {
	return e != nil && (!e.started || len(e.inflight) > 0 || len(e.todo) > 0)
}

// fill plans chunks and starts reading them, up to snapshot.parallelism in
// flight.
func (e *engine) fill(ctx context.Context) error {
	defer func() { e.src.metrics.snapshotChunks.Set(float64(len(e.inflight))) }()
	for len(e.inflight) < e.src.cfg.Snapshot.Parallelism {
		c, err := e.plan(ctx)
		if c == nil || err != nil {
			return err
		}
		if n := len(e.inflight); n > 0 {
			c.prev = e.inflight[n-1]
		}
		e.inflight = append(e.inflight, c)
		e.readers.start(ctx, e, c)
	}
	return nil
}

// plan returns the next chunk to read, of the first table read that has
// one to plan now, or nil. A table found empty is done at once.
func (e *engine) plan(ctx context.Context) (*chunk, error) {
	for _, t := range e.todo {
		after, ok := e.frontier(t)
		if !ok {
			continue
		}
		if err := e.measure(ctx, t); err != nil {
			return nil, err
		}
		st := e.state[t.ident]
		sp, ok, err := e.span(ctx, t, after)
		if err != nil {
			return nil, err
		}
		if !ok {
			e.tableDone(t, "")
			return e.plan(ctx)
		}
		keep, err := e.seen(t)
		if err != nil {
			return nil, err
		}
		e.seq++
		return &chunk{seq: e.seq, table: t, read: st.Signal, span: sp, keep: keep, pin: e.pinSlot(), done: make(chan struct{})}, nil
	}
	return nil, nil
}

// frontier is where the next chunk of t starts, and whether one can be
// planned now: after the last chunk of its read in flight, once that
// one's end is known (a span read up to a limit ends where it ends), or
// where its state says.
func (e *engine) frontier(t *sourceTable) ([]string, bool) {
	read := e.state[t.ident].Signal
	for _, c := range slices.Backward(e.inflight) {
		if c.table != t || c.read != read {
			continue
		}
		if c.span.limit > 0 || c.span.last {
			return nil, false
		}
		return c.span.upto, true
	}
	return e.state[t.ident].After, true
}

// span is the range of t's next chunk, which starts after after; false
// when t has nothing left to read.
func (e *engine) span(ctx context.Context, t *sourceTable, after []string) (span, bool, error) {
	end := e.state[t.ident].End
	size := e.src.cfg.Snapshot.FetchSize
	if !t.keyless() {
		if end.Key == nil || after != nil && slices.Equal(after, end.Key) {
			return span{}, false, nil
		}
		sp := span{after: after, upto: end.Key, limit: size}
		if e.src.cfg.Snapshot.Parallelism == 1 {
			return sp, true, nil // read up to the limit: its end is where the read ends
		}
		// Its end is set, so that the next chunk can be read beside it.
		upto, err := t.boundary(ctx, e.src.conn, sp)
		if err != nil {
			return span{}, false, e.src.failedTo("find where a chunk of table "+t.ident+" ends", err)
		}
		sp.limit, sp.upto, sp.last = 0, upto, upto == nil || slices.Equal(upto, end.Key)
		if upto == nil {
			sp.upto = end.Key
		}
		return sp, true, nil
	}
	var start uint64
	if after != nil {
		start, _ = parseTID(after[0]) // a ctid the engine wrote
	}
	if start >= end.Blocks {
		return span{}, false, nil
	}
	stop := min(end.Blocks, start+max(1, uint64(float64(size)/e.perBlock[t])))
	return span{after: after, upto: []string{tid(stop)}, last: stop >= end.Blocks}, true, nil
}

// finish hands on c's rows, read at lsn (0: without watermarks), with
// keepAlive called while they wait to be queued, and notes how far its
// table is read. The next chunk is read once they are queued, while they
// are handed on: read sooner, its rows would wait longer. A chunk of a
// read that a signal stopped or started over emits nothing.
func (e *engine) finish(ctx context.Context, c *chunk, lsn pglogrepl.LSN, keepAlive func() error) error {
	var recs []sdk.Record
	if st := e.state[c.table.ident]; !st.Done && st.Signal == c.read {
		at := ""
		if e.streamed {
			at = lsn.String()
		}
		recs = c.records(at)
		if err := e.src.snapshotTypes(ctx, c.table, recs); err != nil {
			return err
		}
		if err := e.advance(ctx, c); err != nil {
			return err
		}
	}
	if err := e.queue(ctx, recs, keepAlive); err != nil {
		return err
	}
	e.releaseAfterQueued(c.pin)
	return e.fill(ctx)
}

// advance notes, and while changes stream saves, where c's table's read
// stands after c.
func (e *engine) advance(ctx context.Context, c *chunk) error {
	e.progress.readRows(c.table, c.res.read)
	st := e.state[c.table.ident]
	if c.res.last != nil {
		st.After = c.res.last
	}
	e.state[c.table.ident] = st
	if c.res.done {
		e.tableDone(c.table, c.low.String())
	}
	if !e.streamed {
		return nil
	}
	return e.src.saveTableStates(ctx, e.src.conn, e.state)
}

// tableDone notes that t is read, its last chunk's low watermark at low.
func (e *engine) tableDone(t *sourceTable, low string) {
	st := e.state[t.ident]
	st.Done, st.After, st.Low = true, nil, low
	e.state[t.ident] = st
	e.todo = slices.DeleteFunc(e.todo, func(u *sourceTable) bool { return u == t })
	e.progress.tableDone(t)
}

// queue hands records on, calling keepAlive (nil: nothing) while the
// records queued before wait to be taken.
func (e *engine) queue(ctx context.Context, recs []sdk.Record, keepAlive func() error) error {
	if len(recs) == 0 {
		return nil
	}
	e.src.acks.queued.Add(int64(len(recs)))
	return e.src.q.put(ctx, recs, e.src.statusInterval, keepAlive)
}

// copyAll reads every table to read without watermarks (snapshot.mode
// initial_only), emitting each chunk as read, in the order planned.
func (e *engine) copyAll(ctx context.Context) error {
	if e.src.measured {
		e.progress = followSnapshot(ctx, e.src.conn, e.src.metrics, e.todo)
	}
	if err := e.fill(ctx); err != nil {
		return err
	}
	for len(e.inflight) > 0 {
		c, err := e.oldest(ctx)
		if err != nil {
			return err
		}
		if err := e.finish(ctx, c, 0, nil); err != nil {
			return err
		}
	}
	return nil
}

// oldest takes the oldest chunk in flight once its reader has returned.
func (e *engine) oldest(ctx context.Context) (*chunk, error) {
	c := e.inflight[0]
	e.inflight = e.inflight[1:]
	select {
	case <-c.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return c, c.err
}

// readers are the goroutines that read chunks, one a chunk, and their
// connections, one each while it reads: at most snapshot.parallelism.
type readers struct {
	url  string
	idle chan *pgx.Conn
	wg   sync.WaitGroup
	fail context.CancelCauseFunc // ends the source's reading with a reader's error
}

// start reads c in a goroutine of its own.
func (rs *readers) start(ctx context.Context, e *engine, c *chunk) {
	rs.wg.Add(1)
	go func() {
		defer rs.wg.Done()
		defer close(c.done)
		conn, err := rs.conn(ctx)
		if err == nil {
			err = e.readChunk(ctx, conn, c)
			rs.put(conn, err)
		}
		if err != nil && ctx.Err() == nil {
			c.err = e.src.errorf("snapshot: %s", err)
			if rs.fail != nil {
				rs.fail(c.err)
			}
		}
	}()
}

// conn returns an idle connection, or a new one.
func (rs *readers) conn(ctx context.Context) (*pgx.Conn, error) {
	select {
	case conn := <-rs.idle:
		return conn, nil
	default:
		return connectQuery(ctx, rs.url)
	}
}

// put keeps conn for the next chunk, unless its read failed.
func (rs *readers) put(conn *pgx.Conn, err error) {
	if err == nil {
		select {
		case rs.idle <- conn:
			return
		default:
		}
	}
	_ = conn.Close(context.Background())
}

// close waits for the readers and closes their connections.
func (rs *readers) close() {
	rs.wg.Wait()
	for {
		select {
		case conn := <-rs.idle:
			_ = conn.Close(context.Background())
		default:
			return
		}
	}
}

// measure reads, once a read, where t's rows end when its read begins:
// its greatest key, or a keyless table's blocks (a row version the read
// emits is older, so it is not beyond them; rows written since stream);
// and, once a run, how many rows a keyless table has per block, which
// sizes its chunks.
func (e *engine) measure(ctx context.Context, t *sourceTable) error {
	st := e.state[t.ident]
	if st.End != nil && (!t.keyless() || e.perBlock[t] > 0) {
		return nil
	}
	var end tableEnd
	var err error
	if t.keyless() {
		end, err = e.measureBlocks(ctx, t)
	} else {
		end, err = e.measureKeys(ctx, t)
	}
	if err != nil {
		return err
	}
	if st.End == nil {
		st.End = &end
		e.state[t.ident] = st
	}
	return nil
}

// measureBlocks reads how many blocks the keyless table t has, and rows
// per block as the planner's statistics have them (60 without).
func (e *engine) measureBlocks(ctx context.Context, t *sourceTable) (tableEnd, error) {
	end := tableEnd{CTID: true}
	var perBlock float64
	err := e.src.conn.QueryRow(ctx, `SELECT pg_relation_size(c.oid) / current_setting('block_size')::bigint,
			CASE WHEN c.relpages > 0 AND c.reltuples > 0 THEN c.reltuples / c.relpages ELSE 0 END
		FROM pg_class c WHERE c.oid = $1`, t.oid).Scan(&end.Blocks, &perBlock)
	if err != nil {
		return end, e.src.failedTo("read the size of table "+t.ident, err)
	}
	if perBlock < 1 {
		perBlock = 60
	}
	e.perBlock[t] = perBlock
	return end, nil
}

// measureKeys reads the greatest key of t (none when it is empty).
func (e *engine) measureKeys(ctx context.Context, t *sourceTable) (tableEnd, error) {
	keys, order := make([]string, len(t.keys)), make([]string, len(t.keys))
	for i, name := range t.keyNames() {
		keys[i] = pg.Quote(name)
		order[i] = keys[i] + " DESC"
	}
	sql := fmt.Sprintf("SELECT %s FROM %s ORDER BY %s LIMIT 1", strings.Join(keys, ", "), t.rows(), strings.Join(order, ", "))
	rr := e.src.conn.PgConn().ExecParams(ctx, sql, nil, nil, nil, nil)
	var end tableEnd
	for rr.NextRow() {
		for _, v := range rr.Values() {
			end.Key = append(end.Key, string(v))
		}
	}
	if _, err := rr.Close(); err != nil {
		return end, e.src.failedTo("read the last key of table "+t.ident, err)
	}
	return end, nil
}
