//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	conduitpkg "github.com/connkit/connkit/internal/conduit"
	"github.com/connkit/connkit/internal/pgtest"
)

// TestConduitPostgresLostSlot runs standalone:postgres on table items into
// a keyed copy, stops Conduit, writes to items and makes the server
// invalidate the source's slot (it falls past max_slot_wal_keep_size),
// and starts Conduit again: the pipeline fails, its error naming the slot,
// the setting and snapshot.mode when_needed. With snapshot.mode
// when_needed in the pipeline file, Conduit started again copies the
// table in chunks, rows changed while the slot was lost included, while
// rows keep being inserted and updated, with no other step: the copy
// equals the table.
func TestConduitPostgresLostSlot(t *testing.T) {
	const ddl = `CREATE TABLE items (id int PRIMARY KEY, n bigint)`
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			from, src := sourceDatabase(t, ddl+`; INSERT INTO items SELECT i, i FROM generate_series(1, 3000) i`)
			to, dst := pg.Database(t, ddl)
			slot := dbName(from)
			pipeline := func(mode string) string {
				return pipelineYAML("standalone:postgres", map[string]string{
					"url": from, "tables": "items", "slot.name": slot, "snapshot.fetchSize": "500", "snapshot.mode": mode,
					"sdk.batch.size": "200", "sdk.batch.delay": "10ms",
				}, "standalone:postgres", map[string]string{"url": to})
			}
			dir := t.TempDir()
			flags := append([]string{"--db.type", "badger", "--db.badger.path", filepath.Join(t.TempDir(), "conduit.db")}, engine.flags...)
			c := startServer(t, conduitpkg.Options{Bin: conduitBin(t), Dir: dir, Pipeline: pipeline("initial"), Plugins: []string{binary("connkit-postgres")}, Flags: flags})
			waitForCount(t, c, to, `SELECT count(*) FROM items`, 3000, 3*time.Minute)
			pgtest.Exec(t, src, `INSERT INTO items SELECT i, i FROM generate_series(3001, 3100) i`)
			waitForCount(t, c, to, `SELECT count(*) FROM items`, 3100, 3*time.Minute)
			c.stop()

			// While Conduit is stopped, rows change and the slot is lost.
			pgtest.Exec(t, src, `INSERT INTO items SELECT i, i FROM generate_series(3101, 20000) i; UPDATE items SET n = -n WHERE id % 10 = 0`)
			pgtest.InvalidateSlot(t, src, slot)

			failure := failedStart(t, dir, flags)
			for _, want := range []string{"replication slot " + slot + " was invalidated", "raise max_slot_wal_keep_size", "when_needed to start again with a fresh snapshot", "pg_drop_replication_slot"} {
				if !strings.Contains(failure, want) {
					t.Fatalf("Conduit's failure does not say %q:\n%s", want, failure)
				}
			}

			if err := os.WriteFile(filepath.Join(dir, "pipelines", "pipeline.yaml"), []byte(pipeline("when_needed")), 0o644); err != nil {
				t.Fatal(err)
			}
			inserting := keepInserting(t, from, "items", 20001)
			c = runConduit(t, conduitBin(t), dir, flags...)
			waitForCount(t, c, to, `SELECT count(*) FROM items WHERE id > 3100 AND id <= 20000`, 1000, 3*time.Minute)
			pgtest.Exec(t, src, `UPDATE items SET n = n + 1 WHERE id % 7 = 0`) // while the table is read in chunks
			last := inserting.stop()
			waitForCount(t, c, to, `SELECT count(*) FROM items`, int64(last), 3*time.Minute)
			deadline := time.Now().Add(time.Minute)
			for dump(t, dst, "items") != dump(t, src, "items") {
				if time.Now().After(deadline) {
					t.Fatal("the copy differs from the table a minute after every row arrived")
				}
				time.Sleep(100 * time.Millisecond)
			}
			if !strings.Contains(c.Log(), "creating a new slot and taking a fresh snapshot of every table") {
				t.Error("Conduit's log does not say that the source took a fresh snapshot")
			}
			c.stop()
		})
	}
}

// failedStart starts Conduit in dir, expecting its pipeline to fail at
// once: Conduit exits (the v2 engine before its API starts, the default
// engine when the pipeline cannot recover) or the pipeline is degraded. It
// returns Conduit's log and the pipeline's error.
func failedStart(t *testing.T, dir string, flags []string) string {
	t.Helper()
	s, err := conduitpkg.Start(conduitpkg.Options{Bin: conduitBin(t), Dir: dir, Flags: flags})
	if err != nil {
		return err.Error()
	}
	return waitFailed(t, s)
}
