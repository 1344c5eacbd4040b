//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	conduitpkg "github.com/connkit/connkit/internal/conduit"
	"github.com/connkit/connkit/internal/metrics/metricstest"
	"github.com/jackc/pgx/v5"
)

// TestConduitPostgresAddedTable runs standalone:postgres on table items
// into keyless copies (exactly once), stops Conduit once the snapshot and
// some changes are through, adds table extra to the source's tables in the
// pipeline file, and starts Conduit again on its badger store, while rows
// keep being inserted into both tables. Conduit is killed with SIGKILL
// while extra is being read, and started again. extra's rows arrive,
// snapshotted while the changes of both stream; items is not read again
// (connkit_postgres_snapshot_rows_total stays 0 for it); no row of either
// table is missing or there twice.
func TestConduitPostgresAddedTable(t *testing.T) {
	const itemsRows, extraRows = 5000, 8000
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			from, src := sourceDatabase(t, fmt.Sprintf(`
				CREATE TABLE items (id int PRIMARY KEY, n bigint);
				INSERT INTO items SELECT i, i FROM generate_series(1, %d) i;
				CREATE TABLE extra (id int PRIMARY KEY, n bigint);
				INSERT INTO extra SELECT i, i FROM generate_series(1, %d) i`, itemsRows, extraRows))
			to, _ := pg.Database(t, `CREATE TABLE items (id int, n bigint); CREATE TABLE extra (id int, n bigint)`)
			explainLoss(t, from, to, "extra")
			explainLoss(t, from, to, "items")
			metricsAddress := freeAddress(t)
			pipeline := func(tables string) string {
				return pipelineYAML("standalone:postgres", map[string]string{
					"url": from, "tables": tables, "slot.name": dbName(from), "snapshot.fetchSize": "500",
					"sdk.batch.size": "200", "sdk.batch.delay": "10ms", "sdk.metrics.address": metricsAddress,
				}, "standalone:postgres", map[string]string{
					"url": to, "exactlyOnce.enabled": "true",
				}) + "    processors:\n" + dropKey
			}
			adoptOrphans(t) // to wait for the plugins a killed Conduit leaves
			dir := t.TempDir()
			flags := append([]string{"--db.type", "badger", "--db.badger.path", filepath.Join(t.TempDir(), "conduit.db")}, engine.flags...)
			c := startServer(t, conduitpkg.Options{Bin: conduitBin(t), Dir: dir, Pipeline: pipeline("items"), Plugins: []string{binary("connkit-postgres")}, Flags: flags})
			waitCount := func(query string, want int64) {
				t.Helper()
				waitForCount(t, c, to, query, want, 3*time.Minute)
			}
			waitCount(`SELECT count(*) FROM items`, itemsRows)
			if err := insertItems(t.Context(), src, itemsRows+1, 100, 10); err != nil {
				t.Fatal(err)
			}
			last := itemsRows + 100
			waitCount(`SELECT count(*) FROM items`, int64(last))
			c.stop()

			// The pipeline file names one more table; Conduit updates the
			// connector's settings and keeps its position.
			if err := os.WriteFile(filepath.Join(dir, "pipelines", "pipeline.yaml"), []byte(pipeline("items,extra")), 0o644); err != nil {
				t.Fatal(err)
			}
			inserting := keepInserting(t, from, "items", last+1)
			insertingExtra := keepInserting(t, from, "extra", extraRows+1)
			c = runConduit(t, conduitBin(t), dir, flags...)
			srcLabels := []string{"connector_id=e2e:source", "plugin=postgres", "plugin_version=v0.1.0", "role=source"}
			waitCount(`SELECT count(*) FROM extra WHERE id <= `+fmt.Sprint(extraRows), extraRows/3)
			cr := &crash{t: t, dir: dir, flags: flags, url: to, c: c}
			cr.killConduit()
			c = cr.c
			waitCount(`SELECT count(*) FROM extra WHERE id <= `+fmt.Sprint(extraRows), extraRows*2/3)
			during := count(t, to, `SELECT count(*) FROM items WHERE id > `+fmt.Sprint(last))
			waitCount(`SELECT count(DISTINCT id) FROM extra WHERE id <= `+fmt.Sprint(extraRows), extraRows)
			last = inserting.stop()
			lastExtra := insertingExtra.stop()
			waitCount(`SELECT count(DISTINCT id) FROM items`, int64(last))
			waitCount(`SELECT count(DISTINCT id) FROM extra`, int64(lastExtra))
			t.Logf("rows inserted after the restart: items %d (%d delivered when extra was two thirds read), extra %d", last-itemsRows-100, during, lastExtra-extraRows)

			// The last chunks read the rows inserted meanwhile, which came as
			// changes, and leave them out.
			await(t, metricsAddress, "0", func(v float64) bool { return v == 0 }, "connkit_postgres_snapshot_tables_remaining", srcLabels...)
			got, err := metricstest.Scrape(metricsAddress)
			if err != nil {
				t.Fatal(err)
			}
			itemsRead, _ := got.Get("connkit_postgres_snapshot_rows_total", append(srcLabels, "table=public.items")...)
			extraRead, _ := got.Get("connkit_postgres_snapshot_rows_total", append(srcLabels, "table=public.extra")...)
			remaining, _ := got.Get("connkit_postgres_snapshot_tables_remaining", srcLabels...)
			t.Logf("connkit_postgres_snapshot_rows_total: items %v, extra %v; tables remaining %v", itemsRead, extraRead, remaining)
			if itemsRead != 0 {
				t.Errorf("items was read again: connkit_postgres_snapshot_rows_total %v", itemsRead)
			}
			if extraRead == 0 || remaining != 0 {
				t.Errorf("extra's snapshot after the kill: %v rows read, %v tables remaining", extraRead, remaining)
			}
			c.stop()
			for table, want := range map[string]int64{"items": int64(last), "extra": int64(lastExtra)} {
				rows := count(t, to, `SELECT count(*) FROM `+table)
				distinct := count(t, to, fmt.Sprintf(`SELECT count(DISTINCT id) FROM %s WHERE id BETWEEN 1 AND %d`, table, want))
				t.Logf("%s: rows %d, missing %d, duplicated %d", table, want, want-distinct, rows-distinct)
				if distinct != want || rows != want {
					t.Errorf("%s: %d rows, %d distinct of ids 1 to %d", table, rows, distinct, want)
				}
			}
			c.checkProblems("record key is not structured") // drop-key on a key with a schema, as in the crash tests
		})
	}
}

// explainLoss logs, if the test has failed, what tracing a lost row
// needs: the rows of table that the copy lacks with the transaction that
// wrote each (xmin), the positions the destination wrote that name their
// keys, the changes' transactions whose positions the destination has
// only in part, and the source's state row.
func explainLoss(t *testing.T, from, to, table string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		src, err := pgx.Connect(ctx, from)
		if err != nil {
			return
		}
		defer src.Close(ctx)
		dst, err := pgx.Connect(ctx, to)
		if err != nil {
			return
		}
		defer dst.Close(ctx)
		copied := collect(ctx, dst, `SELECT DISTINCT id FROM `+table, pgx.RowTo[int32])
		have := map[int32]bool{}
		for _, id := range copied {
			have[id] = true
		}
		type row struct {
			ID   int32
			Xmin string
		}
		rows := collect(ctx, src, `SELECT id, xmin::text FROM `+table+` ORDER BY id`, pgx.RowToStructByPos[row])
		positions := collect(ctx, dst, `SELECT convert_from(p, 'UTF8') FROM connkit_positions, unnest(positions) p`, pgx.RowTo[string])
		var missing []string
		for _, r := range rows {
			if have[r.ID] {
				continue
			}
			var named []string
			for _, p := range positions {
				if strings.Contains(p, fmt.Sprintf(`"key":["%d"]`, r.ID)) {
					named = append(named, p)
				}
			}
			missing = append(missing, fmt.Sprintf("%d (xmin %s, positions %q)", r.ID, r.Xmin, named))
		}
		t.Logf("%s: %d rows missing from the copy: %s", table, len(missing), strings.Join(missing, ", "))
		indexes := map[string][]int{}
		for _, p := range positions {
			var pos struct {
				LSN string `json:"lsn"`
				I   int    `json:"i"`
				Key []string
			}
			if json.Unmarshal([]byte(p), &pos) == nil && pos.Key == nil {
				indexes[pos.LSN] = append(indexes[pos.LSN], pos.I)
			}
		}
		for lsn, is := range indexes {
			if slices.Sort(is); len(is) != 10 {
				t.Logf("transaction %s: changes %v written", lsn, is)
			}
		}
		state := collect(ctx, src, `SELECT t::text FROM connkit_snapshots t`, pgx.RowTo[string])
		t.Logf("state rows: %s", state)
	})
}

// collect returns the rows of query, nil if it fails: explainLoss logs
// what it finds.
func collect[T any](ctx context.Context, conn *pgx.Conn, query string, scan pgx.RowToFunc[T]) []T {
	rows, err := conn.Query(ctx, query)
	if err != nil {
		return nil
	}
	got, _ := pgx.CollectRows(rows, scan)
	return got
}
