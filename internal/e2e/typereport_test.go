package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestTypeReport measures, type by type, what the incumbent's Postgres
// plugins do with the matrix's values next to connkit's, in real Conduit
// (default engine), snapshot only: one table per type (id and a column of
// it, the matrix's six rows), created beforehand at the destination. For
// each type it reports exact (every value equal as text), changed (a value
// differs: the first one is shown) or fails (a record was not written: the
// first reason). It runs only with CONNKIT_TYPE_REPORT=1 (about two
// minutes), and fails only if a pipeline cannot be run at all.
func TestTypeReport(t *testing.T) {
	if os.Getenv("CONNKIT_TYPE_REPORT") == "" {
		t.Skip("set CONNKIT_TYPE_REPORT=1 to measure the incumbent's plugins type by type")
	}
	incumbent := pluginRef(t, incumbentPlugin(t, "postgres"))
	connkit := pluginRef(t, binary("connkit-postgres"))
	from, src := sourceDatabase(t, matrixTypes+matrixTable)
	if _, err := src.Exec(t.Context(), matrixRows); err != nil {
		t.Fatal(err)
	}
	_, cols := matrixValues(t, src)
	cols = slices.DeleteFunc(cols, func(c string) bool { return c == "id" })
	typeOf := map[string]string{}
	for _, c := range columnTypes(t, src, "matrix") {
		name, typ, _ := strings.Cut(c, " ")
		typeOf[name] = typ
	}
	var ddl strings.Builder
	for _, c := range cols {
		fmt.Fprintf(&ddl, "CREATE TABLE m_%[1]s AS SELECT id, %[1]s FROM matrix; ALTER TABLE m_%[1]s ADD PRIMARY KEY (id);", c)
	}
	if _, err := src.Exec(t.Context(), ddl.String()); err != nil {
		t.Fatal(err)
	}
	tables := func(conn *pgx.Conn) {
		t.Helper()
		var b strings.Builder
		for _, c := range cols {
			fmt.Fprintf(&b, "CREATE TABLE m_%s (id int PRIMARY KEY, %s %s);", c, c, typeOf[c])
		}
		if _, err := conn.Exec(t.Context(), b.String()); err != nil {
			t.Fatal(err)
		}
	}
	results := map[string]map[string]string{} // by pipeline, by column

	// connkit's source into the incumbent's destination (and into
	// connkit's, as the baseline), every table in one pipeline, failures
	// to a dead-letter queue.
	for _, dst := range []struct{ name, plugin string }{{"connkit → connkit", connkit}, {"connkit → incumbent", incumbent}} {
		for _, schemas := range []bool{true, false} {
			name := fmt.Sprintf("%s, schemas %s", dst.name, onOff(schemas))
			to, conn := sourceDatabase(t, matrixTypes)
			tables(conn)
			dlq := filepath.Join(t.TempDir(), "dlq.jsonl")
			list := make([]string, len(cols))
			for i, c := range cols {
				list[i] = "m_" + c
			}
			s := fmt.Sprint(schemas)
			pipeline := pipelineYAML(connkit, map[string]string{"url": from, "tables": strings.Join(list, ","), "slot.name": dbName(from),
				"sdk.schema.extract.key.enabled": s, "sdk.schema.extract.payload.enabled": s},
				dst.plugin, map[string]string{"url": to}) + deadLetterQueue(dlq, 100000, 99999)
			c := startConduitWith(t, pipeline, []string{incumbentPlugin(t, "postgres"), binary("connkit-jsonl")}, engines[0].flags...)
			c.waitForAcked(6 * len(cols))
			c.stop()
			failed := dlqReasons(t, dlq)
			results[name] = map[string]string{}
			for _, col := range cols {
				results[name][col] = compareTable(t, src, conn, col, failed["m_"+col])
			}
			pgxDropSlot(t, src, dbName(from))
		}
	}

	// The incumbent's source into connkit's destination: a pipeline per
	// table, as its source fails as a whole at a type it cannot read.
	for _, schemas := range []bool{true, false} {
		name := fmt.Sprintf("incumbent → connkit, schemas %s", onOff(schemas))
		results[name] = map[string]string{}
		s := fmt.Sprint(schemas)
		for _, col := range cols {
			to, conn := sourceDatabase(t, matrixTypes)
			tables(conn)
			pipeline := pipelineYAML(incumbent, map[string]string{"url": from, "tables": "m_" + col, "cdcMode": "logrepl", "snapshotMode": "initial",
				"logrepl.slotName": dbName(from), "logrepl.publicationName": "p_" + col,
				"sdk.schema.extract.key.enabled": s, "sdk.schema.extract.payload.enabled": s},
				connkit, map[string]string{"url": to})
			c := startConduitWith(t, pipeline, []string{incumbentPlugin(t, "postgres")}, engines[0].flags...)
			results[name][col] = awaitTable(t, c, src, conn, col)
			c.Kill()
			pgxDropSlot(t, src, dbName(from))
			conn.Close(t.Context()) // a server's connections are few: one table's at a time
		}
	}

	// The report: a row per type, a column per pipeline.
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range results {
			if !yield(n) {
				return
			}
		}
	})
	var b strings.Builder
	fmt.Fprintf(&b, "\n| type | %s |\n|---|%s\n", strings.Join(names, " | "), strings.Repeat("---|", len(names)))
	for _, col := range cols {
		fmt.Fprintf(&b, "| `%s` |", typeOf[col])
		for _, n := range names {
			fmt.Fprintf(&b, " %s |", results[n][col])
		}
		b.WriteByte('\n')
	}
	t.Log(b.String())
}

// dlqReasons reads a dead-letter queue's records: the first reason for
// each table.
func dlqReasons(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return out // nothing failed
	}
	for _, l := range readJSONLines[dlqLine](t, path) {
		md, _ := l.After.Structured["metadata"].(map[string]any)
		table, _ := md["opencdc.collection"].(string)
		if _, ok := out[table]; !ok {
			out[table] = l.Metadata["conduit.dlq.nack.error"]
		}
	}
	return out
}

// compareTable compares m_col's values in the two databases: exact,
// changed (the first difference) or fails (failed, the first reason a
// record was not written, or the rows missing).
func compareTable(t *testing.T, src, dst *pgx.Conn, col, failed string) string {
	t.Helper()
	q := fmt.Sprintf("SELECT id::text, coalesce(%s::text, 'NULL') FROM m_%s ORDER BY id", col, col)
	want, got := queryMap[string, string](t, src, q), queryMap[string, string](t, dst, q)
	if failed != "" {
		return "fails: " + cell(failed)
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			return fmt.Sprintf("fails: row %s missing", id)
		}
		if g != w {
			return fmt.Sprintf("changed: %s → %s", cell(w), cell(g))
		}
	}
	return "exact"
}

// awaitTable waits up to 30 s for the incumbent's pipeline to copy
// m_col's six rows, or to fail, and compares what it copied.
func awaitTable(t *testing.T, c *conduit, src, dst *pgx.Conn, col string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if status, errText := c.PipelineState("e2e"); status == "STATUS_DEGRADED" {
			return "fails: " + cell(errText)
		}
		select {
		case <-c.Done(): // exited on the degraded pipeline
			if m := sourceFailure.FindStringSubmatch(c.Log()); m != nil {
				return "fails: " + cell(strings.ReplaceAll(m[1], `\"`, `"`))
			}
			return "fails: " + cell(fmt.Sprint("Conduit exited: ", c.Err()))
		default:
		}
		if c.executions("e2e") >= 6 {
			return compareTable(t, src, dst, col, "")
		}
		time.Sleep(200 * time.Millisecond)
	}
	return compareTable(t, src, dst, col, "")
}

// sourceFailure is the reason in Conduit's log for a source that failed
// its pipeline, less the prefixes Conduit and the incumbent's SDK add.
var sourceFailure = regexp.MustCompile(`"error":"node e2e:source stopped with error: (?:source stream was stopped unexpectedly: )?(?:error reading from source: )?(?:read plugin error: )?((?:[^"\\]|\\.)*)`)

// cell shortens s for a table cell.
func cell(s string) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ")
	if len(s) > 100 { // the cause comes last
		s = "…" + s[len(s)-100:]
	}
	return "`" + s + "`"
}

// pgxDropSlot drops the replication slot name once no one holds it.
func pgxDropSlot(t *testing.T, conn *pgx.Conn, name string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var left int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1`, name).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			return
		}
		_, _ = conn.Exec(t.Context(), `SELECT pg_drop_replication_slot($1) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active`, name)
	}
}
