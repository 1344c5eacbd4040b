//go:build linux

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestConduitPostgresSignal runs standalone:postgres on table items into
// a keyed copy (exactly once), spoils the copy's values once the snapshot
// is through, and inserts an execute-snapshot signal into the source's
// signal table while rows keep being inserted into items: the source
// reads items again in chunks, which mends every row, and the copy ends
// equal to the table. In the second case Conduit is killed with SIGKILL
// while items is being read again, and started again: the read goes on.
func TestConduitPostgresSignal(t *testing.T) {
	const rows = 6000
	for _, engine := range engines {
		for _, kill := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/kill=%v", engine.name, kill), func(t *testing.T) {
				from, _ := sourceDatabase(t, fmt.Sprintf(`
					CREATE TABLE items (id int PRIMARY KEY, n bigint);
					INSERT INTO items SELECT i, i FROM generate_series(1, %d) i`, rows))
				to, _ := pg.Database(t, `CREATE TABLE items (id int PRIMARY KEY, n bigint)`)
				pipeline := pipelineYAML("standalone:postgres", map[string]string{
					"url": from, "tables": "items", "slot.name": dbName(from), "snapshot.fetchSize": "500",
					"signal.table": "connkit_signals", "sdk.batch.size": "200", "sdk.batch.delay": "10ms",
				}, "standalone:postgres", map[string]string{
					"url": to, "exactlyOnce.enabled": "true",
				})
				cr := startCrash(t, pipeline, to, engine.flags)
				t.Cleanup(func() {
					if t.Failed() {
						logs, _ := filepath.Glob(filepath.Join(cr.dir, "conduit*.log"))
						for _, l := range logs {
							b, _ := os.ReadFile(l)
							for _, line := range strings.Split(string(b), "\n") {
								if strings.Contains(line, "postgres") || strings.Contains(line, "ERR") || strings.Contains(line, "error") {
									t.Log("conduit log:", line)
								}
							}
						}
					}
				})
				cr.waitFor(`SELECT count(*) FROM items`, rows)
				cr.waitPersisted("e2e:source")
				execSQL(t, to, `UPDATE items SET n = -n`)
				inserting := keepInserting(t, from, "items", rows+1)
				execSQL(t, from, `INSERT INTO connkit_signals (id, type, data) VALUES ('s1', 'execute-snapshot', '{"data-collections": ["public.items"], "type": "incremental"}')`)
				mended := fmt.Sprintf(`SELECT count(*) FROM items WHERE id <= %d AND n > 0`, rows)
				if kill {
					cr.waitFor(mended, rows/3)
					cr.killConduit()
				}
				cr.waitFor(mended, rows)
				last := inserting.stop()
				cr.waitFor(`SELECT count(*) FROM items`, int64(last))
				cr.c.stop()
				if kill && cr.startedOver() {
					t.Fatal("the source started over after the kill, rather than going on with the read")
				}
				want, got := tableRows(t, from), tableRows(t, to)
				if !maps.Equal(got, want) {
					t.Fatalf("the copy has %d rows, the source %d, or their values differ", len(got), len(want))
				}
				if n := count(t, from, `SELECT count(*) FROM connkit_signals`); n != 1 {
					t.Fatalf("%d signals", n)
				}
				t.Logf("%d rows, %d of them inserted while the signal's read ran", last, last-rows)
			})
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

// tableRows returns items' rows, id to n.
func tableRows(t *testing.T, url string) map[int64]int64 {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rs, _ := conn.Query(t.Context(), `SELECT id, n FROM items`)
	out := map[int64]int64{}
	var id, n int64
	if _, err := pgx.ForEachRow(rs, []any{&id, &n}, func() error { out[id] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}
