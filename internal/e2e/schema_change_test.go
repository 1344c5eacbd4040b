package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// TestConduitColumnsAddedWhileRunning runs standalone:postgres →
// standalone:postgres in real Conduit, both engines, with a dead-letter
// queue, and adds columns to the source's table (and, first, to the
// destination's) while it runs, writing rows that fill them after each:
// no record goes to the queue, and the copy equals the original, new
// columns included.
func TestConduitColumnsAddedWhileRunning(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			is := is.New(t)
			const ddl = `CREATE TABLE e6 (id int PRIMARY KEY, n int)`
			from, src := sourceDatabase(t, ddl+`; INSERT INTO e6 SELECT i, i FROM generate_series(1, 200) i`)
			to, dst := sourceDatabase(t, ddl)
			dlq := filepath.Join(t.TempDir(), "dlq.jsonl")
			batch := map[string]string{"sdk.batch.size": "50", "sdk.batch.delay": "20ms"}
			pipeline := pipelineYAML("standalone:postgres", merge(batch, map[string]string{"url": from, "tables": "e6", "slot.name": dbName(from)}),
				"standalone:postgres", merge(batch, map[string]string{"url": to})) +
				deadLetterQueue(dlq, 1000, 999)
			c := startConduitWith(t, pipeline, []string{binary("connkit-jsonl")}, engine.flags...)
			c.waitForAcked(200)
			exec := func(conn *pgx.Conn, sql string) {
				t.Helper()
				if _, err := conn.Exec(t.Context(), sql); err != nil {
					t.Fatal(err)
				}
			}
			acked := 200
			for k := 2; k <= 4; k++ {
				col := fmt.Sprintf("c%d", k)
				exec(dst, `ALTER TABLE e6 ADD COLUMN `+col+` text`)
				exec(src, `ALTER TABLE e6 ADD COLUMN `+col+` text`)
				exec(src, fmt.Sprintf(`INSERT INTO e6 (id, n, %s) SELECT i, i, '%s-' || i FROM generate_series(%d, %d) i`, col, col, k*1000, k*1000+299))
				exec(src, fmt.Sprintf(`UPDATE e6 SET %s = 'updated' WHERE id <= 10`, col))
				acked += 300 + 10
				c.waitForAcked(acked)
			}
			c.stopClean(dlq)
			is.Equal(count(t, to, `SELECT count(*) FROM e6 WHERE c4 IS NOT NULL`), int64(310))
			is.Equal(dump(t, dst, "e6"), dump(t, src, "e6"))
		})
	}
}

// TestConduitSchemaChangesFollowed runs standalone:postgres →
// standalone:postgres in real Conduit, both engines, with a dead-letter
// queue, into an empty database, and changes the source's table while rows
// stream: a column added, one renamed, two widened (varchar(10) →
// varchar(100), int → bigint), one retyped (int → text), one dropped, and
// rows written after each change that need it (values too long or too
// large for the old types). The destination creates the table and follows
// every change: no record goes to the queue, and the copy equals the
// original in the source's columns; the dropped column stays, NULL in the
// rows written since.
func TestConduitSchemaChangesFollowed(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			is := is.New(t)
			from, src := sourceDatabase(t, `CREATE TABLE e7 (id int PRIMARY KEY, name varchar(10), n int, code int, gone text);
				INSERT INTO e7 SELECT i, 'r' || i, i, i, 'g' FROM generate_series(1, 500) i`)
			to, dst := sourceDatabase(t, ``)
			dlq := filepath.Join(t.TempDir(), "dlq.jsonl")
			pipeline := pipelineYAML("standalone:postgres", map[string]string{"url": from, "tables": "e7", "slot.name": dbName(from)},
				"standalone:postgres", map[string]string{"url": to}) +
				deadLetterQueue(dlq, 1000, 999)
			c := startConduitWith(t, pipeline, []string{binary("connkit-jsonl")}, engine.flags...)
			c.waitForAcked(500)
			exec := func(sql string) {
				t.Helper()
				if _, err := src.Exec(t.Context(), sql); err != nil {
					t.Fatal(err)
				}
			}
			acked := 500
			// Each step changes the table and writes 100 rows in 10
			// transactions, and updates 5, that need the change; Conduit
			// streams them while the next step runs.
			for i, step := range []struct{ ddl, columns, values string }{
				{`ALTER TABLE e7 ADD COLUMN price numeric(12,2)`, `name, n, code, gone, price`, `'s' || i, i, i, 'g', i / 4.0`},
				{`ALTER TABLE e7 RENAME COLUMN name TO label`, `label, n, code, gone, price`, `'t' || i, i, i, 'g', i / 8.0`},
				{`ALTER TABLE e7 ALTER COLUMN label TYPE varchar(100)`, `label, n, code, gone, price`, `repeat('long', 20) || i, i, i, 'g', 1`},
				{`ALTER TABLE e7 ALTER COLUMN n TYPE bigint`, `label, n, code, gone, price`, `'u' || i, 9000000000 + i, i, 'g', 2`},
				{`ALTER TABLE e7 ALTER COLUMN code TYPE text`, `label, n, code, gone, price`, `'v' || i, i, 'code ' || i, 'g', 3`},
				{`ALTER TABLE e7 DROP COLUMN gone`, `label, n, code, price`, `'w' || i, i, 'x', 4`},
			} {
				exec(step.ddl)
				base := (i + 1) * 1000
				for tx := 0; tx < 10; tx++ {
					exec(fmt.Sprintf(`INSERT INTO e7 (id, %s) SELECT i, %s FROM generate_series(%d, %d) i`, step.columns, step.values, base+tx*10, base+tx*10+9))
				}
				exec(fmt.Sprintf(`UPDATE e7 SET n = n + 1 WHERE id BETWEEN %d AND %d`, i*5+1, i*5+5))
				acked += 100 + 5
			}
			c.waitForAcked(acked)
			c.stopClean(dlq)
			const cols = `id, label, n, code, price`
			is.Equal(column(t, to, `SELECT concat_ws('|', `+cols+`) FROM e7 ORDER BY id`), column(t, from, `SELECT concat_ws('|', `+cols+`) FROM e7 ORDER BY id`))
			is.Equal(columnTypes(t, dst, "e7"), []string{"id integer not null", "label character varying(100)", "n bigint", "code text", "gone text", "price numeric(12,2)"})
			is.Equal(count(t, to, `SELECT count(*) FROM e7 WHERE id >= 6000 AND gone IS NULL`), int64(100))
		})
	}
}

// stopClean checks that the pipeline still runs, stops Conduit, and fails
// the test if Conduit logged a problem or a record went to the dead-letter
// queue at dlq.
func (c *conduit) stopClean(dlq string) {
	c.t.Helper()
	c.checkRunning("e2e")
	c.stop()
	c.checkProblems()
	if b, err := os.ReadFile(dlq); err == nil && len(b) > 0 {
		c.t.Fatalf("records went to the dead-letter queue:\n%s", b)
	}
}
