//go:build linux

package e2e

import (
	"strings"
	"testing"
	"time"
)

// partitionedTableDDL is table m, partitioned by region into m_a, m_b and
// m_c, with 3,000 rows spread over the three.
const partitionedTableDDL = `
	CREATE TABLE m (id int, region text, n bigint, note text, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
	CREATE TABLE m_a PARTITION OF m FOR VALUES IN ('a');
	CREATE TABLE m_b PARTITION OF m FOR VALUES IN ('b');
	CREATE TABLE m_c PARTITION OF m FOR VALUES IN ('c');
	INSERT INTO m SELECT i, chr(97 + i % 3), i, 'row ' || i FROM generate_series(1, 3000) i`

// partitionedChanges change m while it streams: every partition, a
// partition created and one attached, one detached (whose rows as they
// were then are kept in m_b_at_detach, and which changes after).
var partitionedChanges = []string{
	`INSERT INTO m SELECT i, chr(97 + i % 3), i, 'new ' || i FROM generate_series(3001, 3300) i`,
	`UPDATE m SET n = -n, note = NULL WHERE id % 50 = 0`,
	`DELETE FROM m WHERE id BETWEEN 100 AND 120`,
	`INSERT INTO m_c SELECT i, 'c', i, 'into m_c' FROM generate_series(3301, 3400) i`,
	// Partitions attached while streaming.
	`CREATE TABLE m_d PARTITION OF m FOR VALUES IN ('d')`,
	`INSERT INTO m SELECT i, 'd', i, 'attached ' || i FROM generate_series(4001, 4200) i`,
	`CREATE TABLE m_e (id int NOT NULL, region text NOT NULL, n bigint, note text)`,
	`ALTER TABLE m ATTACH PARTITION m_e FOR VALUES IN ('e')`,
	`INSERT INTO m_e SELECT i, 'e', i, 'attached ' || i FROM generate_series(5001, 5200) i`,
	`UPDATE m SET n = n + 1 WHERE region IN ('d', 'e') AND id % 2 = 0`,
	`DELETE FROM m_d WHERE id > 4190`,
	// A partition detached: its later changes are not m's.
	`ALTER TABLE m DETACH PARTITION m_b`,
	`CREATE TABLE m_b_at_detach AS SELECT * FROM m_b`,
	`INSERT INTO m_b SELECT i, 'b', i, 'detached' FROM generate_series(6001, 6100) i`,
	`UPDATE m_b SET n = 0`,
	`DELETE FROM m_b WHERE id < 500`,
}

// TestConduitPostgresPartitioned runs standalone:postgres on partitioned
// table m, named by its parent, into standalone:postgres in real Conduit,
// on both engines: the snapshot of every partition, then changes to each
// (through the parent and into a partition), to a partition created and
// one attached while streaming, and to one detached, while rows keep
// being inserted. The copy, a table of its own, equals m plus the detached
// partition's rows as they were when it was detached: none missing, none
// changed after the detach.
func TestConduitPostgresPartitioned(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			from, src := sourceDatabase(t, partitionedTableDDL)
			to, _ := pg.Database(t, "")
			batch := map[string]string{"sdk.batch.size": "500", "sdk.batch.delay": "20ms"}
			pipeline := pipelineYAML("standalone:postgres", merge(batch, map[string]string{"url": from, "tables": "m", "slot.name": dbName(from), "snapshot.fetchSize": "400"}),
				"standalone:postgres", merge(batch, map[string]string{"url": to}))
			c := startConduit(t, pipeline, engine.flags...)
			waitForCount(t, c, to, `SELECT count(*) FROM m`, 3000, 3*time.Minute)

			inserting := keepInsertingRegions(t, from, 100000)
			exec := func(sql string) {
				t.Helper()
				if _, err := src.Exec(t.Context(), sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			for _, sql := range partitionedChanges {
				exec(sql)
				time.Sleep(50 * time.Millisecond) // rows keep being inserted meanwhile
			}
			inserted := inserting.stop() - 100000 + 1
			exec(`INSERT INTO m VALUES (9999, 'a', 9999, 'last')`)
			waitForCount(t, c, to, `SELECT count(*) FROM m WHERE id = 9999`, 1, 3*time.Minute)

			rows := func(table string) string {
				return `SELECT format('%s|%s|%s|%s', id, region, n, note) FROM ` + table + ` ORDER BY id, region`
			}
			want := column(t, from, rows("(SELECT * FROM m UNION ALL SELECT * FROM m_b_at_detach) r"))
			got := column(t, to, rows("m"))
			missing, extra := difference(want, got), difference(got, want)
			t.Logf("rows: source %d (%d inserted while streaming), copy %d; missing or different %d, extra or different %d", len(want), inserted, len(got), len(missing), len(extra))
			if len(missing) > 0 || len(extra) > 0 {
				t.Errorf("the copy differs: missing %q, extra %q", missing[:min(5, len(missing))], extra[:min(5, len(extra))])
			}
			c.stop()
			c.checkProblems()
		})
	}
}

// difference returns the rows of a that b lacks, as multisets: a row a
// has twice and b once is in it once.
func difference(a, b []string) []string {
	left := make(map[string]int, len(b))
	for _, r := range b {
		left[r]++
	}
	var out []string
	for _, r := range a {
		if left[r] > 0 {
			left[r]--
			continue
		}
		out = append(out, r)
	}
	return out
}

// keepInsertingRegions inserts rows into m from id first on, ten per
// transaction in regions a and c, one transaction every 10ms, until
// stopped.
func keepInsertingRegions(t *testing.T, url string, first int) *inserter {
	return keepRunning(t, url, `INSERT INTO m SELECT i, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'c' END, i, 'meanwhile' FROM generate_series($1::int, $1::int + 9) i`, first)
}

// TestInteropPartitionedIntoIncumbentPostgres copies a partitioned table,
// named by its parent, with connkit's Postgres source into the incumbent's
// Postgres destination: the snapshot of every partition, then changes to
// each, a partition created and one attached while streaming. The copy, a
// plain table, equals the parent.
func TestInteropPartitionedIntoIncumbentPostgres(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			url, conn := sourceDatabase(t, `
				CREATE TABLE m (id int, region text, n bigint, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
				CREATE TABLE m_a PARTITION OF m FOR VALUES IN ('a');
				CREATE TABLE m_b PARTITION OF m FOR VALUES IN ('b');
				INSERT INTO m SELECT i, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END, i FROM generate_series(1, 10) i;
				CREATE TABLE m_copy (id int, region text, n bigint, PRIMARY KEY (id, region))`)
			pipeline := pipelineYAML(pluginRef(t, binary("connkit-postgres")), map[string]string{
				"url": url, "tables": "m", "slot.name": dbName(url), "publication.name": dbName(url),
			}, pluginRef(t, incumbentPlugin(t, "postgres")), map[string]string{"url": url, "table": "m_copy"})
			c := startConduitWith(t, pipeline, []string{incumbentPlugin(t, "postgres")}, engine.flags...)
			c.waitForAcked(10)
			for _, sql := range []string{
				`UPDATE m SET n = -n WHERE id IN (3, 4)`,
				`DELETE FROM m WHERE id = 5`,
				`CREATE TABLE m_c PARTITION OF m FOR VALUES IN ('c')`,
				`INSERT INTO m VALUES (11, 'c', 11)`,
				`CREATE TABLE m_d (id int NOT NULL, region text NOT NULL, n bigint)`,
				`ALTER TABLE m ATTACH PARTITION m_d FOR VALUES IN ('d')`,
				`INSERT INTO m_d VALUES (12, 'd', 12)`,
			} {
				if _, err := conn.Exec(t.Context(), sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			c.waitForAcked(10 + 5)
			if d := tableDifferences(t, conn, "m", "m_copy"); len(d) > 0 {
				t.Fatalf("the copy differs:\n%s", strings.Join(d, "\n"))
			}
			c.stop()
			// It warns once that a record has no payload schema: a
			// delete's, which has no payload to decode.
			c.checkProblems("does not have an attached schema for the payload")
		})
	}
}
