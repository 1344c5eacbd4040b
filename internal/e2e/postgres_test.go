package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/host"
	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// generatedTable is the table for generator records.
const generatedTable = `CREATE TABLE generated (seq bigint PRIMARY KEY, name text, n bigint, at timestamptz)`

// database creates a database with generatedTable and returns its URL.
func database(t *testing.T) string {
	t.Helper()
	url, _ := pg.Database(t, generatedTable)
	return url
}

// count returns query's one number.
func count(t *testing.T, url, query string) int64 {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var n int64
	if err := conn.QueryRow(t.Context(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// column returns query's one column, a string a row, from the database
// at url.
func column(t *testing.T, url, query string) []string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	return columnOn(t, conn, query)
}

// columnOn returns query's one column, a string a row, from conn.
func columnOn(t *testing.T, conn *pgx.Conn, query string, args ...any) []string {
	t.Helper()
	rows, err := conn.Query(t.Context(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// columnTypes returns table's columns as conn's database has them, in
// order: name, type as format_type spells it, and NOT NULL.
func columnTypes(t *testing.T, conn *pgx.Conn, table string) []string {
	t.Helper()
	return columnOn(t, conn, `SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
		FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, table)
}

// dump returns the rows of table, each as PostgreSQL prints a row, one a
// line, in id order.
func dump(t *testing.T, conn *pgx.Conn, table string) string {
	t.Helper()
	var s string
	if err := conn.QueryRow(t.Context(), `SELECT string_agg(r::text, E'\n' ORDER BY id) FROM `+table+` r`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPostgresOverTheProtocol runs generator → postgres through the plugin
// binaries, with destination batching, and checks the table.
func TestPostgresOverTheProtocol(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// A statement-level trigger notes how many rows each statement that
	// writes the table brings, COPY included.
	url, _ := pg.Database(t, generatedTable+`;
	CREATE TABLE statements (n bigint);
	CREATE FUNCTION note_statement() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO statements SELECT count(*) FROM added; RETURN NULL; END $$;
	CREATE TRIGGER note_statement AFTER INSERT ON generated REFERENCING NEW TABLE AS added
		FOR EACH STATEMENT EXECUTE FUNCTION note_statement();`)
	src := source(t, host.Options{})
	p := launch(t, "connkit-postgres", host.Options{})
	dst, err := p.Destination()
	is.NoErr(err)
	openPipeline(t, ctx, src, dst, generatorSettings(5000), map[string]string{
		"url": url, "table": "generated", "key": "seq", "sdk.batch.size": "500",
	})
	res, err := host.Pipeline{Source: src, Destination: dst, Records: 5000, PerMessage: true}.Run(ctx)
	is.NoErr(err)
	is.Equal(res.Acked, int64(5000))
	// One Write, one statement, per batch of at most 500 records: what has
	// arrived when the destination is free. Acks of Writes that end while
	// a Send is in flight share the next message, so their messages say
	// nothing about the Writes.
	is.True(count(t, url, `SELECT count(*) FROM statements WHERE n > 0`) >= 10)
	is.Equal(count(t, url, `SELECT count(*) FROM statements WHERE n > 500`), int64(0))
	is.Equal(count(t, url, `SELECT sum(n) FROM statements`), int64(5000))
	is.Equal(count(t, url, `SELECT count(*) FROM generated WHERE name IS NOT NULL AND at IS NOT NULL`), int64(5000))
	is.Equal(count(t, url, `SELECT max(seq) FROM generated`), int64(5000))
}
