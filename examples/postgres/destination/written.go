package destination

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/examples/postgres/internal/pg"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// written is the exactly-once mode's record of what the destination has
// written: the positions of the last records it committed (at least
// window of them), kept in a table of the destination database and in
// memory. Each statement that writes rows is sent with the insert of
// their positions, in one transaction, so a position is in the table if
// and only if its record is.
//
// The table holds one row per transaction: the connector's ID, a
// sequence number and the positions it wrote, oldest first. Once the
// positions beyond the newest window make up whole transactions, those
// are deleted with a later transaction.
//
// Concurrent Writes use it together: its state is under mu, never held
// while the database is asked anything. A transaction gets its sequence
// number when its statements are queued, so transactions may commit out
// of the order of their numbers; the deletion, which takes every
// transaction up to a number, never reaches one still open or whose
// outcome is unknown (see [written.floor]), and only one transaction in
// flight carries it. Positions are unique and the SDK hands a record to
// one Write at a time, so two Writes never carry the same position; but
// a Write may carry positions that an earlier attempt, whose connection
// broke, sent in a transaction that may or may not have committed: each
// Write first finds out, from the table, how such transactions ended
// (see [written.settle]).
type written struct {
	ident     string // the table, quoted
	connector string
	window    int

	mu      sync.Mutex
	seen    map[string]struct{} // the positions in txs
	txs     []writtenTx         // committed, by sequence number
	count   int                 // positions in txs
	seq     int64               // the last sequence number given
	open    map[int64]struct{}  // the transactions given a number that have not ended
	unknown map[int64][]string  // the transactions that ended with their connection, committed or not: their positions
	pruneTo int64               // transactions up to this one are to be deleted from the table
	pruned  int64               // transactions up to this one are deleted
	pruning bool                // a transaction in flight deletes them
}

// writtenTx is one transaction's positions.
type writtenTx struct {
	seq       int64
	positions []string
}

// pendingTx is a transaction queued to write positions, and the
// transactions up to prunes (0: none) it deletes.
type pendingTx struct {
	writtenTx
	prunes int64
}

// newWritten returns the store for the connector Conduit names in the
// environment, creating its table if it does not exist, and loads it.
func newWritten(ctx context.Context, pool *pgxpool.Pool, table string, window int) (*written, error) {
	id := os.Getenv(pconnector.EnvConduitConnectorID)
	if id == "" {
		return nil, fmt.Errorf(`parameter "exactlyOnce.enabled": the positions are kept per connector, whose ID Conduit gives in %s, which is not set`, pconnector.EnvConduitConnectorID)
	}
	parts, err := pg.SplitName(table)
	if err != nil {
		return nil, fmt.Errorf(`parameter "exactlyOnce.table": %w`, err)
	}
	w := &written{ident: pgx.Identifier(parts).Sanitize(), connector: id, window: window}
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+w.ident+` (
		connector text NOT NULL,
		seq bigint NOT NULL,
		positions bytea[] NOT NULL,
		PRIMARY KEY (connector, seq))`); err != nil && !isUniqueViolation(err) { // a violation: another connector created it at the same moment
		return nil, fmt.Errorf(`parameter "exactlyOnce.table": create table %s: %s`, table, pg.Reason(err, pool.Config().ConnConfig.ConnString()))
	}
	if err := w.load(ctx, pool); err != nil {
		return nil, err
	}
	return w, nil
}

// load reads the connector's positions from the table, before any Write.
func (w *written) load(ctx context.Context, pool *pgxpool.Pool) error {
	rows, _ := pool.Query(ctx, `SELECT seq, positions FROM `+w.ident+` WHERE connector = $1 ORDER BY seq`, w.connector)
	var txs []writtenTx
	var tx writtenTx
	var positions [][]byte
	_, err := pgx.ForEachRow(rows, []any{&tx.seq, &positions}, func() error {
		txs = append(txs, writtenTx{tx.seq, stringsOf(positions)})
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the written positions from %s: %w", w.ident, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen, w.open, w.unknown = map[string]struct{}{}, map[int64]struct{}{}, map[int64][]string{}
	for _, tx := range txs {
		w.seq = max(w.seq, tx.seq)
		w.add(tx)
	}
	return nil
}

// stringsOf returns positions as strings.
func stringsOf(positions [][]byte) []string {
	out := make([]string, len(positions))
	for i, p := range positions {
		out[i] = string(p)
	}
	return out
}

// has reports whether the record at pos is written.
func (w *written) has(pos sdk.Position) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.seen[string(pos)]
	return ok
}

// unwritten returns the indexes of the records whose positions are not
// written.
func (w *written) unwritten(records []sdk.Record) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	index := make([]int, 0, len(records))
	for i, r := range records {
		if _, ok := w.seen[string(r.Position)]; !ok {
			index = append(index, i)
		}
	}
	return index
}

// add notes a committed transaction, and forgets the oldest while the
// others hold window positions and none older is open or unknown. Its
// caller holds mu.
func (w *written) add(tx writtenTx) {
	i, _ := slices.BinarySearchFunc(w.txs, tx.seq, func(t writtenTx, seq int64) int { return cmp.Compare(t.seq, seq) })
	w.txs = slices.Insert(w.txs, i, tx)
	w.count += len(tx.positions)
	for _, p := range tx.positions {
		w.seen[p] = struct{}{}
	}
	floor := w.floor()
	for len(w.txs) > 1 && w.count-len(w.txs[0].positions) >= w.window && w.txs[0].seq < floor {
		old := w.txs[0]
		for _, p := range old.positions {
			delete(w.seen, p)
		}
		w.count -= len(old.positions)
		w.txs = w.txs[1:]
		w.pruneTo = old.seq
	}
}

// floor is the lowest sequence number of a transaction that is open or
// whose outcome is unknown: the table's transactions below it are all
// ended, and every number given later is above it, so deleting up to
// below it deletes only transactions known committed. Its caller holds mu.
func (w *written) floor() int64 {
	floor := int64(math.MaxInt64)
	for seq := range w.open {
		floor = min(floor, seq)
	}
	for seq := range w.unknown {
		floor = min(floor, seq)
	}
	return floor
}

// exec runs sql, the statement writing the records at positions, with
// args, through run, as one statement that also inserts their positions
// (and deletes forgotten ones) in data-modifying WITH clauses: one
// statement, and so one transaction and one round trip, as cheap for a
// record or a few as the statement alone.
func (w *written) exec(run func(sql string, args []any) error, sql string, args []any, positions []sdk.Position) error {
	tx, raw := w.begin(positions)
	n := len(args)
	with := "WITH kept AS (INSERT INTO " + w.ident + " (connector, seq, positions) VALUES ($" + strconv.Itoa(n+1) + ", $" + strconv.Itoa(n+2) + ", $" + strconv.Itoa(n+3) + "))"
	args = append(args, w.connector, tx.seq, raw)
	if tx.prunes > 0 {
		with += ", forgotten AS (DELETE FROM " + w.ident + " WHERE connector = $" + strconv.Itoa(n+1) + " AND seq <= $" + strconv.Itoa(n+4) + ")"
		args = append(args, tx.prunes)
	}
	return w.ended(tx, run(with+" "+sql, args))
}

// send runs the statements queued in b, which write the records at
// positions, with the insert of their positions (and the deletion of
// forgotten ones), in one transaction; read reads the results of b's
// statements first.
func (w *written) send(ctx context.Context, pool *pgxpool.Pool, b *pgx.Batch, positions []sdk.Position, read func(pgx.BatchResults) error) error {
	tx := w.queue(b, positions)
	// A batch runs in one implicit transaction.
	br := pool.SendBatch(ctx, b)
	err := read(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return w.ended(tx, err)
}

// commit inserts the positions of the records that tx wrote (and deletes
// forgotten ones) in tx, and commits it.
func (w *written) commit(ctx context.Context, tx pgx.Tx, positions []sdk.Position) error {
	var b pgx.Batch
	wtx := w.queue(&b, positions)
	err := tx.SendBatch(ctx, &b).Close()
	if err == nil {
		err = tx.Commit(ctx)
	}
	return w.ended(wtx, err)
}

// queue adds to b the statements that keep positions, as the next
// transaction, and, unless a transaction in flight does, delete the
// forgotten ones; it returns that transaction, which is open until
// [written.ended] notes how it ended.
func (w *written) queue(b *pgx.Batch, positions []sdk.Position) pendingTx {
	tx, raw := w.begin(positions)
	b.Queue(`INSERT INTO `+w.ident+` (connector, seq, positions) VALUES ($1, $2, $3)`, w.connector, tx.seq, raw)
	if tx.prunes > 0 {
		b.Queue(`DELETE FROM `+w.ident+` WHERE connector = $1 AND seq <= $2`, w.connector, tx.prunes)
	}
	return tx
}

// begin returns the next transaction, to keep positions, given as raw
// bytes too, and to delete the forgotten ones unless a transaction in
// flight does; it is open until [written.ended] notes how it ended.
func (w *written) begin(positions []sdk.Position) (tx pendingTx, raw [][]byte) {
	tx = pendingTx{writtenTx: writtenTx{positions: make([]string, len(positions))}}
	raw = make([][]byte, len(positions))
	for i, p := range positions {
		tx.positions[i], raw[i] = string(p), p
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	tx.seq = w.seq
	w.open[tx.seq] = struct{}{}
	if w.pruneTo > w.pruned && !w.pruning {
		tx.prunes, w.pruning = w.pruneTo, true
	}
	return tx, raw
}

// ended notes how the transaction tx ended: committed when err is nil; of
// an unknown outcome when the connection broke (the server did not say),
// which [written.settle] then finds out.
func (w *written) ended(tx pendingTx, err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.open, tx.seq)
	if tx.prunes > 0 {
		w.pruning = false
	}
	if err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			w.unknown[tx.seq] = tx.positions
		}
		return err
	}
	if tx.prunes > 0 {
		w.pruned = max(w.pruned, tx.prunes)
	}
	w.add(tx.writtenTx)
	return nil
}

// settle finds out how the transactions of unknown outcome ended, and
// notes those that committed. Each one's number is fenced first: a row
// with no positions is inserted under it unless the transaction's own is
// there, and if the transaction is still running at the server (a broken
// connection is not always noticed at once), the insert waits for it to
// end. So a transaction found uncommitted never commits later: its own
// insert would conflict with the fence. Then the table says which
// numbers hold positions, those of transactions that committed.
func (w *written) settle(ctx context.Context, pool *pgxpool.Pool) error {
	w.mu.Lock()
	seqs := slices.Collect(maps.Keys(w.unknown))
	w.mu.Unlock()
	if len(seqs) == 0 {
		return nil
	}
	if _, err := pool.Exec(ctx, `INSERT INTO `+w.ident+` (connector, seq, positions)
		SELECT $1, seq, '{}' FROM unnest($2::bigint[]) AS seq
		ON CONFLICT (connector, seq) DO NOTHING`, w.connector, seqs); err != nil {
		return fmt.Errorf("find out whether a transaction whose connection broke committed, from %s: %w", w.ident, err)
	}
	rows, _ := pool.Query(ctx, `SELECT seq FROM `+w.ident+` WHERE connector = $1 AND seq = ANY ($2) AND cardinality(positions) > 0`, w.connector, seqs)
	committed, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("find out whether a transaction whose connection broke committed, from %s: %w", w.ident, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, seq := range seqs {
		positions, ok := w.unknown[seq]
		if !ok {
			continue // settled by another Write meanwhile
		}
		delete(w.unknown, seq)
		if slices.Contains(committed, seq) {
			w.add(writtenTx{seq, positions})
		}
	}
	return nil
}

// positionsOf returns the positions of rows.
func positionsOf(rows []row) []sdk.Position {
	out := make([]sdk.Position, len(rows))
	for i, r := range rows {
		out[i] = r.position
	}
	return out
}

// writeOnce writes the records whose positions are not written yet, and
// counts the others as written.
func (d *Destination) writeOnce(ctx context.Context, records []sdk.Record) (int, error) {
	w := d.written
	if err := w.settle(ctx, d.pool); err != nil {
		return 0, sdk.Retryable(fmt.Errorf("record at position %q: %w", records[0].Position, err))
	}
	index := w.unwritten(records) // each unwritten record's index in records
	todo := make([]sdk.Record, len(index))
	for i, j := range index {
		todo[i] = records[j]
	}
	if len(todo) == 0 {
		d.metrics.deduplicated.Add(float64(len(records)))
		return len(records), nil
	}
	n, err := d.write(ctx, todo)
	done := len(records) // the records written or skipped
	if n < len(todo) {
		done = index[n]
	}
	d.metrics.deduplicated.Add(float64(done - n))
	return done, err
}
