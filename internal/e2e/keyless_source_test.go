//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// loggedRecord is the part of a record the log destination logs, in the
// OpenCDC JSON format, that the keyless test checks.
type loggedRecord struct {
	Position  string
	Operation string
	Key       any
	Payload   struct {
		Before map[string]any
		After  map[string]any
	}
}

// TestConduitPostgresKeylessSource runs standalone:postgres on a table
// without a primary key (REPLICA IDENTITY FULL) whose rows are each there
// three times, into standalone:log, with schemas on (the default), and
// checks what the log destination logged: every row of the snapshot, the
// duplicates included, then inserts, updates and deletes, each record
// without a key, updates and deletes with the whole old row as before.
func TestConduitPostgresKeylessSource(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			from, src := sourceDatabase(t, `
				CREATE TABLE logs (a int, b text);
				ALTER TABLE logs REPLICA IDENTITY FULL;
				INSERT INTO logs SELECT i % 1000, 'r' || (i % 1000) FROM generate_series(1, 3000) i`)
			pipeline := pipelineYAML("standalone:postgres", map[string]string{
				"url": from, "tables": "logs", "slot.name": dbName(from), "snapshot.fetchSize": "500",
			}, "standalone:log", map[string]string{"level": "info"})
			c := startConduit(t, pipeline, engine.flags...)
			c.waitForAcked(3000)
			for _, sql := range []string{
				`INSERT INTO logs SELECT i, 'new' FROM generate_series(5001, 5010) i`,
				`UPDATE logs SET b = 'updated' WHERE a = 7`, // three rows
				`DELETE FROM logs WHERE a = 8`,              // three rows
			} {
				if _, err := src.Exec(t.Context(), sql); err != nil {
					t.Fatal(err)
				}
			}
			c.waitForAcked(3016)
			c.stop()
			c.checkProblems()

			checkKeylessLogged(t, c.loggedRecords("e2e:destination"))
		})
	}
}

// checkKeylessLogged checks the records the log destination logged for
// TestConduitPostgresKeylessSource: the snapshot's 3,000 rows, then the
// changes, none with a key, updates and deletes with the whole old row.
func checkKeylessLogged(t *testing.T, lines []string) {
	t.Helper()
	is := is.New(t)
	is.Equal(len(lines), 3016)
	var snapshot, changes []string
	positions := map[string]bool{}
	for _, line := range lines {
		var r loggedRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("the log destination's record is not JSON (%v): %s", err, line)
		}
		is.Equal(r.Key, nil) // a keyless table's records have no key
		positions[r.Position] = true
		row := func(d map[string]any) string { return fmt.Sprint(d["a"], ":", d["b"]) }
		if r.Operation == "snapshot" {
			snapshot = append(snapshot, row(r.Payload.After))
			continue
		}
		change := r.Operation + " " + row(r.Payload.After)
		if r.Payload.Before != nil {
			change += " before " + row(r.Payload.Before)
		}
		changes = append(changes, change)
	}
	is.Equal(len(positions), len(lines)) // unique
	var want []string
	for i := 1; i <= 3000; i++ {
		want = append(want, fmt.Sprint(i%1000, ":r", i%1000))
	}
	slices.Sort(want)
	slices.Sort(snapshot)
	is.Equal(snapshot, want) // every row, each of its three copies
	wantChanges := []string{}
	for i := 5001; i <= 5010; i++ {
		wantChanges = append(wantChanges, fmt.Sprint("create ", i, ":new"))
	}
	for range 3 {
		wantChanges = append(wantChanges, "update 7:updated before 7:r7")
	}
	for range 3 {
		wantChanges = append(wantChanges, "delete <nil>:<nil> before 8:r8")
	}
	is.Equal(changes, wantChanges)
}

// TestConduitPostgresKeylessSnapshotResumed copies a keyless table whose
// rows are each there four times into a keyless table with connkit's
// destination (exactly once), kills Conduit with SIGKILL in the middle of
// the snapshot and starts it again: the snapshot resumes inside the table,
// after the last row acknowledged (by ctid), and the copy holds every row
// four times, none more.
func TestConduitPostgresKeylessSnapshotResumed(t *testing.T) {
	const rows, distinct = 240000, 60000
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			is := is.New(t)
			from, _ := sourceDatabase(t, fmt.Sprintf(`
				CREATE TABLE logs (a int, b text);
				ALTER TABLE logs REPLICA IDENTITY FULL;
				INSERT INTO logs SELECT i %% %d, 'r' || (i %% %d) FROM generate_series(1, %d) i`, distinct, distinct, rows))
			to, _ := pg.Database(t, `CREATE TABLE logs (a int, b text)`)
			pipeline := pipelineYAML("standalone:postgres", map[string]string{
				"url": from, "tables": "logs", "slot.name": dbName(from), "snapshot.fetchSize": "500",
				"sdk.batch.size": "100", "sdk.batch.delay": "10ms",
			}, "standalone:postgres", map[string]string{"url": to, "exactlyOnce.enabled": "true"})
			cr := startCrash(t, pipeline, to, engine.flags)
			cr.waitPersisted("e2e:source")
			cr.waitFor(`SELECT count(*) FROM logs`, rows/6)
			cr.killConduit()
			cr.waitFor(`SELECT count(*) FROM logs`, rows)
			time.Sleep(2 * time.Second) // anything more would come now
			if !cr.resumedSnapshot() {
				t.Fatal("the snapshot was not resumed: Conduit was killed after it ended")
			}
			is.Equal(count(t, to, `SELECT count(*) FROM logs`), int64(rows))
			is.Equal(count(t, to, `SELECT count(*) FROM (SELECT a, b FROM logs GROUP BY a, b HAVING count(*) = 4 AND b = 'r' || a) g`), int64(distinct))
			cr.c.stop()
		})
	}
}

// resumedSnapshot reports whether, in one of Conduit's runs, the Postgres
// source resumed its snapshot from a position inside it.
func (cr *crash) resumedSnapshot() bool {
	logs, _ := filepath.Glob(filepath.Join(cr.dir, "conduit*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		if strings.Contains(string(b), "going on with the snapshot after") {
			return true
		}
	}
	return false
}
