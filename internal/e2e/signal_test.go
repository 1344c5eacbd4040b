//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// TestConduitPostgresSignal runs standalone:postgres on table items into
// a copy without a key (exactly once), and once the snapshot is through
// inserts an execute-snapshot signal into the source's signal table while
// rows keep being inserted into items: the source reads items again in
// chunks while the changes stream. Every row there at the signal arrives
// once more (twice in all), each row inserted meanwhile once or twice,
// none missing. In the second case Conduit is killed with SIGKILL while
// items is being read again, and started again: the read goes on, and
// the counts are the same.
func TestConduitPostgresSignal(t *testing.T) {
	const rows = 6000
	for _, engine := range engines {
		for _, kill := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/kill=%v", engine.name, kill), func(t *testing.T) {
				from, _ := sourceDatabase(t, fmt.Sprintf(`
					CREATE TABLE items (id int PRIMARY KEY, n bigint);
					INSERT INTO items SELECT i, i FROM generate_series(1, %d) i`, rows))
				to, _ := pg.Database(t, `CREATE TABLE items (id int, n bigint)`)
				pipeline := pipelineYAML("standalone:postgres", map[string]string{
					"url": from, "tables": "items", "slot.name": dbName(from), "snapshot.fetchSize": "500",
					"signal.table": "connkit_signals", "sdk.batch.size": "200", "sdk.batch.delay": "10ms",
				}, "standalone:postgres", map[string]string{
					"url": to, "exactlyOnce.enabled": "true",
				}) + "    processors:\n" + dropKey
				cr := startCrash(t, pipeline, to, engine.flags)
				t.Cleanup(func() {
					if t.Failed() {
						logPluginLines(t, cr.dir)
					}
				})
				cr.waitFor(`SELECT count(*) FROM items`, rows)
				cr.waitPersisted("e2e:source")
				inserting := keepInserting(t, from, "items", rows+1)
				execSQL(t, from, `INSERT INTO connkit_signals (id, type, data) VALUES ('s1', 'execute-snapshot', '{"data-collections": ["public.items"], "type": "incremental"}')`)
				again := fmt.Sprintf(`SELECT count(*) FROM items WHERE id <= %d`, rows)
				if kill {
					cr.waitFor(again, rows+rows/3)
					cr.killConduit()
				}
				cr.waitFor(again, 2*rows)
				last := inserting.stop()
				cr.waitFor(fmt.Sprintf(`SELECT count(DISTINCT id) FROM items WHERE id > %d`, rows), int64(last-rows))
				time.Sleep(2 * time.Second) // anything more would come now
				cr.c.stop()
				if kill && cr.startedOver() {
					t.Fatal("the source started over after the kill, rather than going on with the read")
				}
				is := is.New(t)
				is.Equal(count(t, to, again), int64(2*rows))                                                                                                           // every row once more
				is.Equal(count(t, to, fmt.Sprintf(`SELECT count(*) FROM (SELECT id FROM items WHERE id <= %d GROUP BY id HAVING count(*) = 2) g`, rows)), int64(rows)) // each twice
				is.Equal(count(t, to, `SELECT count(*) FROM (SELECT id FROM items GROUP BY id HAVING count(*) > 2 OR bool_or(n <> id)) g`), int64(0))
				is.Equal(count(t, from, `SELECT count(*) FROM connkit_signals`), int64(1))
				twice := count(t, to, fmt.Sprintf(`SELECT count(*) FROM (SELECT id FROM items WHERE id > %d GROUP BY id HAVING count(*) = 2) g`, rows))
				t.Logf("%d rows inserted while the signal's read ran, %d of them delivered twice", last-rows, twice)
			})
		}
	}
}

// logPluginLines logs the lines of Conduit's logs in dir that come from
// the postgres plugin or say error.
func logPluginLines(t *testing.T, dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "conduit*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "postgres") || strings.Contains(line, "ERR") || strings.Contains(line, "error") {
				t.Log("conduit log:", line)
			}
		}
	}
}

// execSQL runs sql on the database at url.
func execSQL(t *testing.T, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatal(err)
	}
}
