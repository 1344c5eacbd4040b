package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// The interop tests run connkit's Postgres plugin in real Conduit next to
// connectors built on the incumbent SDK, which encode structured data as
// Avro with the schema in Conduit's schema service (their default), on
// both of Conduit's engines.

// engines are Conduit's two pipeline engines and the flags that pick them.
// A pipeline whose node fails is not restarted: Conduit would retry it for
// ever, the test would wait minutes to see it fail.
var engines = []struct {
	name  string
	flags []string
}{
	{"default engine", []string{"--pipelines.error-recovery.max-retries=0"}},
	{"v2 engine", []string{"--pipelines.error-recovery.max-retries=0", "--preview.pipeline-arch-v2"}},
}

// incumbentPlugin returns the path of the incumbent's plugin name in
// INCUMBENT_BIN. It skips the test when INCUMBENT_BIN is unset, unless CI
// is set, where a missing plugin is a failure.
func incumbentPlugin(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(incumbentBin(t), name)
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// pluginRef returns the name a pipeline gives the plugin binary at path in
// Conduit, standalone:name@version, as its specification says. Both
// Postgres plugins call themselves postgres: only the version tells them
// apart (the incumbent's, built from its module as a dependency, says
// "(devel)").
func pluginRef(t *testing.T, path string) string {
	t.Helper()
	spec := specify(t, path)
	return "standalone:" + spec.Name + "@" + spec.Version
}

// TestInteropBuiltinGenerator runs Conduit's builtin generator, with its
// defaults (structured records whose payload the incumbent SDK's
// middleware encodes as Avro and registers the schema of), into connkit's
// Postgres destination. The generator's key is a random word; a builtin
// processor replaces it with the record's position, which the table's
// primary key takes. Every value must arrive typed: integers beyond a
// double's 53 bits exactly, words as text, times as instants, booleans.
func TestInteropBuiltinGenerator(t *testing.T) {
	const records = 2000
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			is := is.New(t)
			url, conn := pg.Database(t, `CREATE TABLE typed (pos bigint PRIMARY KEY, n bigint, name text, at timestamptz, flag boolean)`)
			pipeline := pipelineYAML("builtin:generator", map[string]string{
				"format.type":         "structured",
				"format.options.n":    "int",
				"format.options.name": "string",
				"format.options.at":   "time",
				"format.options.flag": "bool",
				"recordCount":         fmt.Sprint(records),
			}, pluginRef(t, binary("connkit-postgres")), map[string]string{
				"url": url, "table": "typed", "key": "pos",
			}) + `    processors:
      - id: key
        plugin: field.set
        settings:
          field: .Key
          value: "{{ .Position }}"
          sdk.schema.decode.key.enabled: "false"
          sdk.schema.encode.key.enabled: "false"
`
			c := startConduit(t, pipeline, engine.flags...)
			c.waitForAcked(records)

			var total, positions, exact, words, recent, flags int64
			err := conn.QueryRow(t.Context(), `SELECT count(*), count(DISTINCT pos) FILTER (WHERE pos BETWEEN 1 AND $1),
				-- through a double, every integer from 2^62 on is a multiple of 1024
				count(*) FILTER (WHERE n >= 4611686018427387904 AND n % 1024 <> 0),
				count(*) FILTER (WHERE name ~ '^[A-Za-z-]+$'), -- the generator's words are letters and hyphens
				count(*) FILTER (WHERE at BETWEEN now() - interval '10 minutes' AND now()),
				count(DISTINCT flag)
				FROM typed`, records).Scan(&total, &positions, &exact, &words, &recent, &flags)
			is.NoErr(err)
			is.Equal(total, int64(records))     // a row per record
			is.Equal(positions, int64(records)) // keyed by position
			is.True(exact > records/4)          // about half the integers are beyond 2^62, each kept exactly
			is.Equal(words, int64(records))     // words as text, not quoted JSON or bytes
			is.Equal(recent, int64(records))    // times as the instants they were generated at
			is.Equal(flags, int64(2))           // booleans as booleans
			c.stop()
			// The generator's keys are raw words, which the incumbent SDK
			// warns of when it extracts and encodes schemas, even with key
			// extraction off.
			c.checkProblems("not structured")
		})
	}
}

// kindsTable is the table the Postgres interop tests copy, with the types
// whose values are easiest to change on the way (integers beyond a
// double's, bytes that are not UTF-8, microseconds, decimals), and an empty
// copy of it.
const kindsTable = `
	CREATE TABLE kinds (id bigint PRIMARY KEY, big bigint, raw bytea, tz timestamptz, num numeric, t text);
	INSERT INTO kinds VALUES
		(1, 9007199254740993, '\x00ff80fe', '2026-01-02 03:04:05.123456+05:45', 12345678901234567890.123456789012345, 'tab	é'),
		(2, -9223372036854775808, '\xdeadbeef00c328', '1970-01-01 00:00:00.000001+00', -0.000001, ''),
		(3, 0, '\x', '0001-01-01 00:00:00+00', 0, 'zero');
	CREATE TABLE kinds_copy (LIKE kinds INCLUDING ALL)`

// kindsChanges changes kinds after the snapshot: 2 inserts, 2 updates and
// a delete.
const kindsChanges = `
	INSERT INTO kinds VALUES (4, 9223372036854775807, '\xc328ff', '2000-02-29 23:59:59.999999+00', 0.00000000000000000001, 'four');
	UPDATE kinds SET big = big + 2, raw = '\xff', num = num * 3, tz = tz + interval '1 microsecond' WHERE id = 1;
	DELETE FROM kinds WHERE id = 2;
	UPDATE kinds SET t = 'three' WHERE id = 3;
	INSERT INTO kinds VALUES (5, 1, '\x00', '2026-06-30 12:00:00.5+00', 1.5, 'five')`

// With nulls, a row of NULLs is in the snapshot, and the changes set a
// row's columns to NULL and insert another row of NULLs.
const (
	kindsNullRow     = `INSERT INTO kinds VALUES (6, NULL, NULL, NULL, NULL, NULL)`
	kindsNullChanges = `
	UPDATE kinds SET big = NULL, raw = NULL, tz = NULL, num = NULL, t = NULL WHERE id = 4;
	INSERT INTO kinds VALUES (7, NULL, NULL, NULL, NULL, NULL)`
)

// tableDifferences returns the rows of a and b that are not in the other,
// comparing each row's text: every column as PostgreSQL prints it.
func tableDifferences(t *testing.T, conn *pgx.Conn, a, b string) []string {
	t.Helper()
	rows, err := conn.Query(t.Context(), fmt.Sprintf(`SELECT coalesce(a::text, '-'), coalesce(b::text, '-')
		FROM %s a FULL JOIN %s b ON a::text = b::text WHERE a.id IS NULL OR b.id IS NULL`, a, b))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var x, y string
		if err := rows.Scan(&x, &y); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s: %s | %s: %s", a, x, b, y))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// copyKinds runs the pipeline that pipeline makes of the database's URL, a
// copy of kinds into kinds_copy, snapshot first, then the changes (with
// NULLs if nulls is set), and checks that the copy equals the original, row
// by row, after each, and that Conduit logged no problems but those
// containing one of the expected strings (the incumbent's noise).
func copyKinds(t *testing.T, flags []string, nulls bool, expected []string, pipeline func(url string) string) {
	t.Helper()
	is := is.New(t)
	url, conn := sourceDatabase(t, kindsTable)
	snapshot, records := 3, 3+5
	if nulls {
		_, err := conn.Exec(t.Context(), kindsNullRow)
		is.NoErr(err)
		snapshot, records = snapshot+1, records+1+2
	} else {
		// Without it, an update's old row has only its key, the rest NULL.
		_, err := conn.Exec(t.Context(), `ALTER TABLE kinds REPLICA IDENTITY FULL`)
		is.NoErr(err)
	}
	c := startConduitWith(t, pipeline(url), []string{incumbentPlugin(t, "postgres")}, flags...)
	c.waitForAcked(snapshot)
	if d := tableDifferences(t, conn, "kinds", "kinds_copy"); len(d) > 0 {
		t.Fatalf("after the snapshot, the copy differs:\n%s", strings.Join(d, "\n"))
	}
	_, err := conn.Exec(t.Context(), kindsChanges)
	is.NoErr(err)
	if nulls {
		_, err := conn.Exec(t.Context(), kindsNullChanges)
		is.NoErr(err)
	}
	c.waitForAcked(records)
	if d := tableDifferences(t, conn, "kinds", "kinds_copy"); len(d) > 0 {
		t.Fatalf("after the changes, the copy differs:\n%s", strings.Join(d, "\n"))
	}
	is.Equal(c.executions("e2e"), float64(records)) // no record twice
	c.stop()
	c.checkProblems(expected...)
}

// TestInteropIncumbentPostgresSource copies a table with the incumbent's
// Postgres source (logical replication, its own Avro schemas, as it
// defaults to) into connkit's Postgres destination. Without NULLs: the
// incumbent's schemas make every column non-nullable, and its source fails
// at the first NULL ("*avro.null is unsupported for Avro long"); with
// logrepl.withAvroSchema off, the incumbent SDK cannot send its timestamps
// ("proto: invalid type: time.Time").
func TestInteropIncumbentPostgresSource(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			incumbent := pluginRef(t, incumbentPlugin(t, "postgres"))
			connkit := pluginRef(t, binary("connkit-postgres"))
			// At Stop, its replication reader logs its own cancellation as an error.
			expected := []string{`"replication exited with an error"`}
			copyKinds(t, engine.flags, false, expected, func(url string) string {
				return pipelineYAML(incumbent, map[string]string{
					"url": url, "tables": "kinds", "cdcMode": "logrepl",
					"logrepl.slotName": dbName(url), "logrepl.publicationName": dbName(url),
				}, connkit, map[string]string{"url": url, "table": "kinds_copy"})
			})
		})
	}
}

// TestInteropIncumbentPostgresDestination copies a table, NULLs included,
// with connkit's Postgres source (its defaults: schemas on) into the
// incumbent's Postgres destination.
func TestInteropIncumbentPostgresDestination(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			incumbent := pluginRef(t, incumbentPlugin(t, "postgres"))
			connkit := pluginRef(t, binary("connkit-postgres"))
			// It warns once that a record has no payload schema: a
			// delete's, which has no payload to decode.
			expected := []string{"does not have an attached schema for the payload"}
			copyKinds(t, engine.flags, true, expected, func(url string) string {
				return pipelineYAML(connkit, map[string]string{
					"url": url, "tables": "kinds", "slot.name": dbName(url), "publication.name": dbName(url),
				}, incumbent, map[string]string{"url": url, "table": "kinds_copy"})
			})
		})
	}
}

// TestInteropIncumbentTableTemplate runs a pipeline file written for the
// incumbent's Postgres destination, whose table setting is the template
// it documents as its default, with connkit's, behind the incumbent's
// Postgres source: the records of two source tables go to tables of their
// names, which connkit's destination creates.
func TestInteropIncumbentTableTemplate(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			is := is.New(t)
			from, _ := sourceDatabase(t, `CREATE TABLE orders (id int PRIMARY KEY, item text);
				INSERT INTO orders SELECT i, 'o' || i FROM generate_series(1, 300) i;
				CREATE TABLE users (id int PRIMARY KEY, name text);
				INSERT INTO users SELECT i, 'u' || i FROM generate_series(1, 200) i`)
			to, _ := pg.Database(t, ``)
			incumbent := incumbentPlugin(t, "postgres")
			c := startConduitWith(t, pipelineYAML(pluginRef(t, incumbent), map[string]string{
				"url": from, "tables": "orders,users", "cdcMode": "logrepl",
				"logrepl.slotName": dbName(from), "logrepl.publicationName": dbName(from),
			}, pluginRef(t, binary("connkit-postgres")), map[string]string{
				"url": to, "table": `{{ index .Metadata "opencdc.collection" }}`,
			}), []string{incumbent}, engine.flags...)
			c.waitForAcked(500)
			for _, q := range []string{`SELECT concat_ws('|', id, item) FROM orders ORDER BY id`, `SELECT concat_ws('|', id, name) FROM users ORDER BY id`} {
				is.Equal(column(t, to, q), column(t, from, q))
			}
			c.stop()
			// At Stop, its replication reader logs its own cancellation as an error.
			c.checkProblems(`"replication exited with an error"`)
		})
	}
}
