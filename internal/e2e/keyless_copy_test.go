//go:build linux

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	conduitpkg "github.com/connkit/connkit/internal/conduit"
	"github.com/matryer/is"
)

// keylessChanges are statements on a keyless table logs (a int, b text,
// j json) whose rows are each there three times: inserts (duplicates
// among them), updates and deletes of one copy of a row (by ctid), of
// every copy, to and from NULL, and of a json value; each a transaction.
var keylessChanges = []string{
	`INSERT INTO logs SELECT i % 50, 'new', '{"x": 1}' FROM generate_series(1, 200) i`,
	`UPDATE logs SET b = 'one of three' WHERE ctid = (SELECT ctid FROM logs WHERE a = 7 LIMIT 1)`,
	`UPDATE logs SET b = 'all three' WHERE a = 8`,
	`DELETE FROM logs WHERE ctid = (SELECT ctid FROM logs WHERE a = 9 LIMIT 1)`,
	`DELETE FROM logs WHERE a = 10`,
	`UPDATE logs SET b = NULL WHERE a BETWEEN 11 AND 20`,
	`UPDATE logs SET b = 'was null' WHERE ctid = (SELECT ctid FROM logs WHERE b IS NULL LIMIT 1)`,
	`UPDATE logs SET j = '{"x": 2}' WHERE a = 21 AND b = 'new'`,
	`DELETE FROM logs WHERE b IS NULL AND a = 12`,
	`UPDATE logs SET a = a + 1000 WHERE a BETWEEN 30 AND 40`,
}

// TestConduitPostgresKeylessCopy copies a table without a primary key
// (REPLICA IDENTITY FULL), every row there three times, into a keyless
// table with connkit's Postgres source and destination in real Conduit,
// with the defaults (Writes in flight by auto), with and without exactly
// once: the snapshot, then keylessChanges, each applied by its old row.
// The copy ends equal to the table, as a multiset of rows.
func TestConduitPostgresKeylessCopy(t *testing.T) {
	for _, engine := range engines {
		for _, once := range []string{"false", "true"} {
			t.Run(engine.name+"/exactlyOnce="+once, func(t *testing.T) {
				from, src := sourceDatabase(t, `
					CREATE TABLE logs (a int, b text, j json);
					ALTER TABLE logs REPLICA IDENTITY FULL;
					INSERT INTO logs SELECT i % 1000, 'r' || (i % 1000), '{"x": 0}' FROM generate_series(1, 3000) i`)
				to, _ := pg.Database(t, `CREATE TABLE logs (a int, b text, j json)`)
				pipeline := pipelineYAML("standalone:postgres", map[string]string{
					"url": from, "tables": "logs", "slot.name": dbName(from),
				}, "standalone:postgres", map[string]string{"url": to, "exactlyOnce.enabled": once})
				c := startConduit(t, pipeline, engine.flags...)
				waitForCount(t, c, to, `SELECT count(*) FROM logs`, 3000, 3*time.Minute)
				for round := range 5 {
					for _, sql := range keylessChanges {
						if _, err := src.Exec(t.Context(), strings.ReplaceAll(sql, "'new'", fmt.Sprintf("'new %d'", round))); err != nil {
							t.Fatalf("%s: %v", sql, err)
						}
					}
				}
				rows := `SELECT concat_ws('|', a, coalesce(b, '<null>'), j::text) FROM logs`
				want := column(t, from, rows)
				slices.Sort(want)
				var got []string
				for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
					if got = column(t, to, rows); len(got) == len(want) {
						if slices.Sort(got); slices.Equal(got, want) {
							break
						}
					}
				}
				if !slices.Equal(got, want) {
					missing, extra := difference(want, got), difference(got, want)
					t.Fatalf("the copy differs from the table: %d rows in the table, %d in the copy; missing %q; extra %q", len(want), len(got), missing[:min(20, len(missing))], extra[:min(20, len(extra))])
				}
				c.stop()
				c.checkProblems()
			})
		}
	}
}

// TestConduitPostgresUnusableIdentity: a table without a primary key
// whose replica identity cannot carry updates and deletes (DEFAULT) fails
// the pipeline with the statement to run, and is not added to the
// publication, so the application's own UPDATEs and DELETEs on it go on.
func TestConduitPostgresUnusableIdentity(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			from, src := sourceDatabase(t, `CREATE TABLE logs (a int, b text); INSERT INTO logs VALUES (1, 'a')`)
			to, _ := pg.Database(t, `CREATE TABLE logs (a int, b text)`)
			pipeline := pipelineYAML("standalone:postgres", map[string]string{
				"url": from, "tables": "logs", "slot.name": dbName(from), "publication.name": dbName(from),
			}, "standalone:postgres", map[string]string{"url": to})
			s, err := conduitpkg.Start(conduitpkg.Options{Bin: conduitBin(t), Dir: t.TempDir(), Pipeline: pipeline, Plugins: []string{binary("connkit-postgres")}, Flags: engine.flags})
			failure := ""
			if err != nil {
				failure = err.Error()
			} else {
				failure = waitFailed(t, s)
			}
			for _, want := range []string{"public.logs", "ALTER TABLE public.logs REPLICA IDENTITY FULL"} {
				if !strings.Contains(failure, want) {
					t.Fatalf("the pipeline's failure does not say %q:\n%s", want, failure)
				}
			}
			is := is.New(t)
			is.Equal(count(t, from, `SELECT count(*) FROM pg_publication_tables WHERE tablename = 'logs'`), int64(0))
			if _, err := src.Exec(t.Context(), `UPDATE logs SET b = 'b'; DELETE FROM logs`); err != nil {
				t.Fatalf("the application's UPDATE and DELETE: %v", err)
			}
		})
	}
}

// waitFailed waits for the pipeline of a Conduit just started to fail:
// Conduit exits, or the pipeline is degraded. It returns the pipeline's
// error and Conduit's log.
func waitFailed(t *testing.T, s *conduitpkg.Server) string {
	t.Helper()
	defer s.Kill()
	deadline := time.After(time.Minute)
	for {
		if status, errText := s.PipelineState("e2e"); status == "STATUS_DEGRADED" {
			return errText + "\n" + s.Log()
		}
		select {
		case <-s.Done():
			return s.Log()
		case <-deadline:
			t.Fatalf("the pipeline did not fail within a minute; Conduit's log:\n%s", s.Log())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
