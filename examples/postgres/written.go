package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
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
// and only if its record is. Only Write uses it, and Write is never
// concurrent.
//
// The table holds one row per transaction: the connector's ID, a
// sequence number and the positions it wrote, oldest first. Once the
// positions beyond the newest window make up whole transactions, those
// are deleted with the next transaction.
type written struct {
	ident     string // the table, quoted
	connector string
	window    int

	seen    map[string]struct{} // the positions in txs
	txs     []writtenTx         // oldest first
	count   int                 // positions in txs
	seq     int64               // the newest transaction's
	pruneTo int64               // transactions up to this one are to be deleted
	stale   bool                // a transaction may or may not have committed: reload before trusting seen
}

// writtenTx is one transaction's positions.
type writtenTx struct {
	seq       int64
	positions []string
}

// newWritten returns the store for the connector Conduit names in the
// environment, creating its table if it does not exist, and loads it.
func newWritten(ctx context.Context, pool *pgxpool.Pool, table string, window int) (*written, error) {
	id := os.Getenv(pconnector.EnvConduitConnectorID)
	if id == "" {
		return nil, fmt.Errorf(`parameter "exactlyOnce.enabled": the positions are kept per connector, whose ID Conduit gives in %s, which is not set`, pconnector.EnvConduitConnectorID)
	}
	parts, err := splitName(table)
	if err != nil {
		return nil, fmt.Errorf(`parameter "exactlyOnce.table": %w`, err)
	}
	w := &written{ident: pgx.Identifier(parts).Sanitize(), connector: id, window: window}
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+w.ident+` (
		connector text NOT NULL,
		seq bigint NOT NULL,
		positions bytea[] NOT NULL,
		PRIMARY KEY (connector, seq))`); err != nil && !isUniqueViolation(err) { // a violation: another connector created it at the same moment
		return nil, fmt.Errorf(`parameter "exactlyOnce.table": create table %s: %s`, table, reason(err, pool.Config().ConnConfig.ConnString()))
	}
	if err := w.load(ctx, pool); err != nil {
		return nil, err
	}
	return w, nil
}

// load reads the connector's positions from the table.
func (w *written) load(ctx context.Context, pool *pgxpool.Pool) error {
	rows, _ := pool.Query(ctx, `SELECT seq, positions FROM `+w.ident+` WHERE connector = $1 ORDER BY seq`, w.connector)
	var txs []writtenTx
	var tx writtenTx
	var positions [][]byte
	_, err := pgx.ForEachRow(rows, []any{&tx.seq, &positions}, func() error {
		ps := make([]string, len(positions))
		for i, p := range positions {
			ps[i] = string(p)
		}
		txs = append(txs, writtenTx{tx.seq, ps})
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the written positions from %s: %w", w.ident, err)
	}
	w.seen, w.txs, w.count, w.seq, w.stale = map[string]struct{}{}, nil, 0, 0, false
	for _, tx := range txs {
		w.add(tx)
	}
	return nil
}

// has reports whether the record at pos is written.
func (w *written) has(pos sdk.Position) bool {
	_, ok := w.seen[string(pos)]
	return ok
}

// add notes a committed transaction, and forgets the oldest while the
// others hold window positions.
func (w *written) add(tx writtenTx) {
	w.txs = append(w.txs, tx)
	w.seq = tx.seq
	w.count += len(tx.positions)
	for _, p := range tx.positions {
		w.seen[p] = struct{}{}
	}
	for len(w.txs) > 1 && w.count-len(w.txs[0].positions) >= w.window {
		old := w.txs[0]
		for _, p := range old.positions {
			delete(w.seen, p)
		}
		w.count -= len(old.positions)
		w.txs = w.txs[1:]
		w.pruneTo = old.seq
	}
}

// exec runs the statement sql writing the records at positions, with the
// insert of their positions (and the deletion of forgotten ones), in one
// transaction.
func (w *written) exec(ctx context.Context, pool *pgxpool.Pool, sql string, args []any, positions []sdk.Position) error {
	var b pgx.Batch
	b.Queue(sql, args...)
	tx, pruned := w.queue(&b, positions)
	// A batch runs in one implicit transaction.
	return w.done(tx, pruned, pool.SendBatch(ctx, &b).Close())
}

// commit inserts the positions of the records that tx wrote (and deletes
// forgotten ones) in tx, and commits it.
func (w *written) commit(ctx context.Context, tx pgx.Tx, positions []sdk.Position) error {
	var b pgx.Batch
	wtx, pruned := w.queue(&b, positions)
	err := tx.SendBatch(ctx, &b).Close()
	if err == nil {
		err = tx.Commit(ctx)
	}
	return w.done(wtx, pruned, err)
}

// queue adds to b the statements that keep positions, as the next
// transaction, and delete the forgotten ones; it returns that transaction
// and the last one it deletes.
func (w *written) queue(b *pgx.Batch, positions []sdk.Position) (writtenTx, int64) {
	tx := writtenTx{seq: w.seq + 1, positions: make([]string, len(positions))}
	raw := make([][]byte, len(positions))
	for i, p := range positions {
		tx.positions[i], raw[i] = string(p), p
	}
	b.Queue(`INSERT INTO `+w.ident+` (connector, seq, positions) VALUES ($1, $2, $3)`, w.connector, tx.seq, raw)
	pruned := w.pruneTo
	if pruned > 0 {
		b.Queue(`DELETE FROM `+w.ident+` WHERE connector = $1 AND seq <= $2`, w.connector, pruned)
	}
	return tx, pruned
}

// done notes how the transaction tx, which deleted up to pruned, ended:
// committed when err is nil.
func (w *written) done(tx writtenTx, pruned int64, err error) error {
	if err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			w.stale = true // the connection broke: the commit may have happened
		}
		return err
	}
	if w.pruneTo == pruned {
		w.pruneTo = 0
	}
	w.add(tx)
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
	if w.stale {
		if err := w.load(ctx, d.pool); err != nil {
			return 0, sdk.Retryable(fmt.Errorf("record at position %q: %w", records[0].Position, err))
		}
	}
	fresh := make([]sdk.Record, 0, len(records))
	index := make([]int, 0, len(records)) // each fresh record's index in records
	for i, r := range records {
		if !w.has(r.Position) {
			fresh = append(fresh, r)
			index = append(index, i)
		}
	}
	if len(fresh) == 0 {
		d.metrics.deduplicated.Add(float64(len(records)))
		return len(records), nil
	}
	n, err := d.write(ctx, fresh)
	done := len(records) // the records written or skipped
	if n < len(fresh) {
		done = index[n]
	}
	d.metrics.deduplicated.Add(float64(done - n))
	return done, err
}
