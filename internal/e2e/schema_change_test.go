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
