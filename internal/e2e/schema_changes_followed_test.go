package e2e

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

// TestConduitSchemaChangesFollowed runs standalone:postgres →
// standalone:postgres in real Conduit, both engines, with a dead-letter
// queue, into an empty database, and changes the source's table while rows
// stream: a column added, one renamed, two widened (varchar(10) →
// varchar(100), int → bigint), one retyped (int → text), one dropped; a
// column added with a constant default (which PostgreSQL gives the rows
// there without writing them to the WAL), an enum created and a column of
// it added with a default, a label added to the enum BEFORE another, a
// domain over int with a check and an array of the enum, a domain over the
// enum and a composite type holding it; and rows written after each change
// that need it. The destination creates the types and follows every
// change: no record goes to the queue, every row equals the source's in
// every column as text (the defaults the rows there before took included),
// the column types are the source's, the enum's labels are in the
// source's order, and the dropped column stays, NULL in the rows written
// since.
func TestConduitSchemaChangesFollowed(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			is := is.New(t)
			from, src := sourceDatabase(t, `CREATE TABLE e9 (id int PRIMARY KEY, name varchar(10), n int, code int, gone text);
				INSERT INTO e9 SELECT i, 'r' || i, i, i, 'g' FROM generate_series(1, 500) i`)
			to, dst := sourceDatabase(t, ``)
			dlq := filepath.Join(t.TempDir(), "dlq.jsonl")
			pipeline := pipelineYAML("standalone:postgres", map[string]string{"url": from, "tables": "e9", "slot.name": dbName(from)},
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
			const later = `label, n, code, price, discount`
			for i, step := range []struct{ ddl, columns, values string }{
				{`ALTER TABLE e9 ADD COLUMN price numeric(12,2)`, `name, n, code, gone, price`, `'s' || i, i, i, 'g', i / 4.0`},
				{`ALTER TABLE e9 RENAME COLUMN name TO label`, `label, n, code, gone, price`, `'t' || i, i, i, 'g', i / 8.0`},
				{`ALTER TABLE e9 ALTER COLUMN label TYPE varchar(100)`, `label, n, code, gone, price`, `repeat('long', 20) || i, i, i, 'g', 1`},
				{`ALTER TABLE e9 ALTER COLUMN n TYPE bigint`, `label, n, code, gone, price`, `'u' || i, 9000000000 + i, i, 'g', 2`},
				{`ALTER TABLE e9 ALTER COLUMN code TYPE text`, `label, n, code, gone, price`, `'v' || i, i, 'code ' || i, 'g', 3`},
				{`ALTER TABLE e9 DROP COLUMN gone`, `label, n, code, price`, `'w' || i, i, 'x', 4`},
				{`ALTER TABLE e9 ADD COLUMN discount numeric(5,2) DEFAULT 0`, later, `'d' || i, i, 'x', 5, 0.5`},
				{`CREATE TYPE stat AS ENUM ('new', 'paid'); ALTER TABLE e9 ADD COLUMN status stat DEFAULT 'new'`, later + `, status`, `'e' || i, i, 'x', 6, 1, 'paid'`},
				{`ALTER TYPE stat ADD VALUE 'held' BEFORE 'paid'`, later + `, status`, `'f' || i, i, 'x', 7, 2, 'held'`},
				{`CREATE DOMAIN grade AS int CHECK (VALUE BETWEEN 1 AND 5); ALTER TABLE e9 ADD COLUMN grade grade, ADD COLUMN tags stat[]`,
					later + `, status, grade, tags`, `'g' || i, i, 'x', 8, 3, 'held', i % 5 + 1, '{held,new,paid}'`},
				{`CREATE DOMAIN open_stat AS stat CHECK (VALUE <> 'paid'); CREATE TYPE addr AS (street text, status stat); ALTER TABLE e9 ADD COLUMN os open_stat, ADD COLUMN a addr`,
					later + `, status, grade, tags, os, a`, `'h' || i, i, 'x', 9, 4, 'new', 2, '{}', 'held', ROW('main ' || i, 'paid')::addr`},
			} {
				exec(step.ddl)
				base := (i + 1) * 1000
				for tx := 0; tx < 10; tx++ {
					exec(fmt.Sprintf(`INSERT INTO e9 (id, %s) SELECT i, %s FROM generate_series(%d, %d) i`, step.columns, step.values, base+tx*10, base+tx*10+9))
				}
				exec(fmt.Sprintf(`UPDATE e9 SET n = n + 1 WHERE id BETWEEN %d AND %d`, i*5+1, i*5+5))
				acked += 100 + 5
			}
			c.waitForAcked(acked)
			c.stopClean(dlq)
			const rows = `SELECT ROW(id, label, n, code, price, discount, status, grade, tags, os, a)::text FROM e9 ORDER BY id`
			is.Equal(column(t, to, rows), column(t, from, rows))
			// The column the source dropped stays at the destination.
			const types = `SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
				WHERE a.attrelid = 'e9'::regclass AND a.attnum > 0 AND NOT a.attisdropped AND a.attname <> 'gone' ORDER BY a.attnum`
			is.Equal(column(t, to, types), column(t, from, types))
			is.Equal(column(t, to, `SELECT enum_range(NULL::stat)::text`), []string{"{new,held,paid}"})
			is.Equal(count(t, to, `SELECT count(*) FROM e9 WHERE id <= 500 AND discount = 0 AND status = 'new'`), int64(500))
			is.Equal(columnTypes(t, dst, "e9")[4], "gone text")
			is.Equal(count(t, to, `SELECT count(*) FROM e9 WHERE id >= 6000 AND gone IS NULL`), int64(600))
		})
	}
}
