package destination

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/matryer/is"
)

// copyRun is copyMin and more records, enough for one run to go through
// COPY.
const copyRun = 2*copyMin + 50

// tricky are texts that COPY's text format must escape or could take for
// its own markers, each written and read back as it is.
var tricky = []string{`back\slash`, "tab\there", "new\nline", "carriage\rreturn", `\N`, `\.`, "\\.\n", `\\N`, "", " ", "ok \u00e9\U0001F600"}

// Runs long enough to go through COPY write what the statements over
// arrays write: plain inserts, creates of new and existing rows, updates
// of the same key twice in a run (the last wins), deletes, and text that
// COPY escapes, each in order.
func TestCopyRuns(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	conn, keyed := setup(t, `CREATE TABLE k (id int PRIMARY KEY, s text, n int); CREATE TABLE plain (id int, s text)`, map[string]string{"table": "k"})
	text := func(i int) string { return tricky[i%len(tricky)] + fmt.Sprint(i) }
	pos := 0
	write := func(op sdk.Operation, id func(i int) int, after func(i int) sdk.Data) {
		t.Helper()
		var records []sdk.Record
		for i := range copyRun {
			pos++
			records = append(records, rec(fmt.Sprint(pos), op, sdk.StructuredData{"id": id(i)}, after(i)))
		}
		n, err := keyed.Write(ctx, records)
		is.NoErr(err)
		is.Equal(n, len(records))
	}
	same := func(i int) int { return i }
	// New rows: the plain insert tried first; then the same rows again: the
	// upsert; then each key twice in a run, the second wins; then deletes.
	write(sdk.OperationCreate, same, func(i int) sdk.Data { return sdk.StructuredData{"s": text(i), "n": 0} })
	write(sdk.OperationSnapshot, same, func(i int) sdk.Data { return sdk.StructuredData{"s": text(i), "n": 1} })
	write(sdk.OperationUpdate, func(i int) int { return i / 2 }, func(i int) sdk.Data { return sdk.StructuredData{"s": text(i), "n": i} })
	write(sdk.OperationDelete, func(i int) int { return 2 * i }, func(int) sdk.Data { return nil })
	var want []string
	for id := range copyRun {
		switch {
		case id%2 == 0: // deleted
		case id < copyRun/2:
			want = append(want, fmt.Sprintf("%d|%s|%d", id, text(2*id+1), 2*id+1))
		default:
			want = append(want, fmt.Sprintf("%d|%s|1", id, text(id)))
		}
	}
	is.Equal(pgtest.Rows(t, conn, `SELECT id, s, n FROM k ORDER BY id`), want)

	cfg := keyed.cfg
	cfg.Table = "plain"
	plain, err := New(cfg)
	is.NoErr(err)
	is.NoErr(plain.Open(ctx))
	defer plain.Teardown(context.Background())
	var records []sdk.Record
	want = nil
	for i := range copyRun {
		records = append(records, rec(fmt.Sprint(i), sdk.OperationCreate, nil, sdk.StructuredData{"id": i, "s": text(i)}))
		want = append(want, fmt.Sprintf("%d|%s", i, text(i)))
	}
	records[7].Payload.After.(sdk.StructuredData)["s"] = nil
	want[7] = "7|<nil>"
	n, err := plain.Write(ctx, records)
	is.NoErr(err)
	is.Equal(n, len(records))
	is.Equal(pgtest.Rows(t, conn, `SELECT id, s FROM plain ORDER BY id`), want)
}

// A run that COPY fails for one record's data is written without it: the
// record is found and nacked alone with its position, column and the
// database's reason, and every other record is written, for each class
// of statement.
func TestCopyRunFaults(t *testing.T) {
	for _, c := range []copyFault{
		{"plain insert", false, sdk.OperationCreate, false},
		{"create", true, sdk.OperationCreate, false},
		{"create of existing rows", true, sdk.OperationCreate, true},
		{"update", true, sdk.OperationUpdate, true},
		{"delete", true, sdk.OperationDelete, true},
	} {
		for _, at := range []int{0, copyRun / 2, copyRun - 1} {
			t.Run(fmt.Sprintf("%s/at=%d", c.name, at), func(t *testing.T) {
				is := is.New(t)
				settings := map[string]string{"table": "t"}
				if c.key {
					settings["key"] = "id"
				}
				conn, d := setup(t, `CREATE TABLE t (id bigint, v varchar(3), n int)`, settings)
				if c.key {
					pgtest.Exec(t, conn, `ALTER TABLE t ADD PRIMARY KEY (id)`)
				}
				if c.existing {
					pgtest.Exec(t, conn, `INSERT INTO t SELECT i, 'old', -1 FROM generate_series(0, $1 - 1) AS i`, copyRun)
				}
				out, err := driveWrite(t.Context(), d, c.records(at), copyRun)
				is.NoErr(err)
				is.Equal(out.Retries, 0)
				is.Equal(len(out.Faults), 1)
				want := c.fault(at)
				if ferr := out.Faults[at]; ferr == nil || !sdk.IsRecordFault(ferr) || !strings.Contains(ferr.Error(), want) {
					t.Fatalf("faults %v, want one at %d: %s", out.Faults, at, want)
				}
				is.Equal(pgtest.Rows(t, conn, `SELECT id, v, n FROM t ORDER BY id`), c.rows(at))
			})
		}
	}
}

// copyFault is a run of copyRun records of one class of statement, one
// of which the database refuses.
type copyFault struct {
	name     string
	key      bool
	op       sdk.Operation
	existing bool // the rows exist before
}

// records is the run, whose record at is refused: its value too long, or
// the key of its delete not a number.
func (c copyFault) records(at int) []sdk.Record {
	var records []sdk.Record
	for i := range copyRun {
		id, after := any(i), sdk.Data(sdk.StructuredData{"id": i, "v": "abc", "n": i})
		if i == at {
			if c.op == sdk.OperationDelete {
				id = "not a number"
			} else {
				after = sdk.StructuredData{"id": i, "v": "abcd", "n": i}
			}
		}
		if c.op == sdk.OperationDelete {
			after = nil
		}
		var key sdk.Data
		if c.key {
			key = sdk.StructuredData{"id": id}
		}
		records = append(records, rec(fmt.Sprint(i), c.op, key, after))
	}
	return records
}

// fault is the error of the record at.
func (c copyFault) fault(at int) string {
	if c.op == sdk.OperationDelete {
		return fmt.Sprintf(`record at position "%d": table t: column "id" (bigint): invalid input syntax for type bigint: "not a number" [SQLSTATE 22P02]`, at)
	}
	return fmt.Sprintf(`record at position "%d": table t: column "v" (character varying(3)): value too long for type character varying(3) [SQLSTATE 22001]`, at)
}

// rows are the table's rows after the run, the record at refused.
func (c copyFault) rows(at int) []string {
	var rows []string
	for i := range copyRun {
		switch {
		case c.op == sdk.OperationDelete && i == at:
			rows = append(rows, fmt.Sprintf("%d|old|-1", i))
		case c.op == sdk.OperationDelete:
		case i == at && c.existing:
			rows = append(rows, fmt.Sprintf("%d|old|-1", i))
		case i == at:
		default:
			rows = append(rows, fmt.Sprintf("%d|abc|%d", i, i))
		}
	}
	return rows
}

// Where COPY into a table would not do what INSERT does, runs of plain
// inserts go through the staging table: a rule on the table applies, and a
// column GENERATED ALWAYS AS IDENTITY refuses values. A user who may not
// create temporary tables, into a table under row security too, gets the
// statements.
func TestCopyOnlyWhereItInserts(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	dbURL, conn := server.Database(t, `
		CREATE TABLE ruled (id int, s text);
		CREATE TABLE seen (id int);
		CREATE RULE seen AS ON INSERT TO ruled DO ALSO INSERT INTO seen VALUES (NEW.id);
		CREATE TABLE ident (id int GENERATED ALWAYS AS IDENTITY, s text);
		CREATE TABLE guarded (id int, s text);
		ALTER TABLE guarded ENABLE ROW LEVEL SECURITY;
		CREATE POLICY everyone ON guarded USING (true) WITH CHECK (true);
		CREATE TABLE keyed (id int PRIMARY KEY, s text)`)
	count := fmt.Sprint(copyRun)

	n, err := opened(t, Config{URL: dbURL, Table: "ruled"}).Write(ctx, copyRecords(sdk.OperationCreate, false, "x"))
	is.NoErr(err)
	is.Equal(n, copyRun)
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*) FROM seen`), []string{count})

	n, err = opened(t, Config{URL: dbURL, Table: "ident"}).Write(ctx, copyRecords(sdk.OperationCreate, false, "x"))
	is.Equal(n, 0)
	is.True(err != nil && strings.Contains(err.Error(), `cannot insert a non-DEFAULT value into column "id"`))
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*) FROM ident`), []string{"0"})

	userURL := withoutTemp(t, dbURL, conn)
	guarded := opened(t, Config{URL: userURL, Table: "guarded"})
	n, err = guarded.Write(ctx, copyRecords(sdk.OperationCreate, false, "x"))
	is.NoErr(err)
	is.Equal(n, copyRun)
	is.True(guarded.tables["guarded"].hints.noCopy.Load())
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*) FROM guarded`), []string{count})
	keyed := opened(t, Config{URL: userURL, Table: "keyed"})
	for _, s := range []string{"new", "upserted"} { // the plain insert tried first, then the upsert
		n, err = keyed.Write(ctx, copyRecords(sdk.OperationCreate, true, s))
		is.NoErr(err)
		is.Equal(n, copyRun)
	}
	is.True(keyed.tables["keyed"].hints.noCopy.Load()) // the upsert's staging table
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*), min(s), max(s) FROM keyed`), []string{count + "|upserted|upserted"})
}

// copyRecords is a run of copyRun records of op, keyed by id or not, each
// setting s.
func copyRecords(op sdk.Operation, keyed bool, s string) []sdk.Record {
	var out []sdk.Record
	for i := range copyRun {
		var key sdk.Data
		after := sdk.StructuredData{"id": i, "s": s}
		if keyed {
			key, after = sdk.StructuredData{"id": i}, sdk.StructuredData{"s": s}
		}
		out = append(out, rec(fmt.Sprint(i), op, key, after))
	}
	return out
}

// withoutTemp returns the URL of the database at dbURL for a user who may
// write guarded and keyed but may not create temporary tables, dropped
// when the test ends.
func withoutTemp(t *testing.T, dbURL string, conn *pgx.Conn) string {
	var db string
	if err := conn.QueryRow(t.Context(), `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, conn, `CREATE ROLE connkit_copy_test LOGIN; GRANT ALL ON guarded, keyed TO connkit_copy_test;
		REVOKE TEMP ON DATABASE `+pgx.Identifier{db}.Sanitize()+` FROM PUBLIC`)
	t.Cleanup(func() {
		if _, err := conn.Exec(context.Background(), `DROP OWNED BY connkit_copy_test; DROP ROLE connkit_copy_test`); err != nil {
			t.Error(err)
		}
	})
	return strings.Replace(dbURL, "postgres@", "connkit_copy_test@", 1)
}

// In the exactly-once mode, the positions of a run written through COPY
// commit with its rows: a replay of the run writes nothing twice.
func TestCopyExactlyOnce(t *testing.T) {
	is := is.New(t)
	t.Setenv(pconnector.EnvConduitConnectorID, "pipeline:destination")
	conn, d := setup(t, `CREATE TABLE items (n int)`, map[string]string{"table": "items", "exactlyOnce.enabled": "true"})
	n, err := d.Write(t.Context(), inserts(1, copyRun))
	is.NoErr(err)
	is.Equal(n, copyRun)
	d2 := reopen(t, d)
	n, err = d2.Write(t.Context(), inserts(1, copyRun+copyMin))
	is.NoErr(err)
	is.Equal(n, copyRun+copyMin)
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*), count(DISTINCT n), min(n), max(n) FROM items`), []string{fmt.Sprintf("%[1]d|%[1]d|1|%[1]d", copyRun+copyMin)})
}

// A run written through COPY whose commit's answer the connection loses
// is retryable in the exactly-once mode, plain inserts included, and
// whether the commit went through or not (pgx cancels what a connection
// it loses was doing, which the commit may or may not finish first), the
// next Write writes each record once: it reads the positions again and
// skips those written.
func TestCopyExactlyOnceLostCommit(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	// A deferred constraint trigger runs at COMMIT: the test holds the
	// lock it waits for while it breaks the connection.
	d, proxy, tx, conn := lostCommitSetup(t, `CREATE CONSTRAINT TRIGGER wait_for_test AFTER INSERT ON items DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION wait_for_test()`, 1000)
	done := writeAsync(ctx, d, inserts(1, copyRun))
	for waiting := false; !waiting; {
		is.NoErr(conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)`).Scan(&waiting))
	}
	proxy.Drop()
	is.NoErr(tx.Commit(ctx))
	r := <-done
	is.Equal(r.n, 0)
	is.True(sdk.IsRetryable(r.err))
	for ended := false; !ended; { // the commit, or its cancellation, releases the lock
		is.NoErr(conn.QueryRow(ctx, `SELECT NOT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory')`).Scan(&ended))
	}

	n, err := d.Write(ctx, inserts(1, copyRun+2))
	is.NoErr(err)
	is.Equal(n, copyRun+2)
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*), count(DISTINCT n) FROM items`), []string{fmt.Sprintf("%[1]d|%[1]d", copyRun+2)})
}

func TestAppendCopyValue(t *testing.T) {
	is := is.New(t)
	for in, want := range map[string]string{
		"plain":           "plain",
		"":                "",
		`a\b`:             `a\\b`,
		"a\tb\nc\rd":      `a\tb\nc\rd`,
		`\N`:              `\\N`,
		"\\.":             `\\.`,
		"é\t\U0001F600\\": "é\\t\U0001F600\\\\",
	} {
		is.Equal(string(appendCopyValue([]byte("x"), in)), "x"+want)
	}
	is.True(!strings.Contains(string(appendCopyValue(nil, "a\nb")), "\n"))
}

// BenchmarkEncode encodes a run of 10000 rendered upserts for the
// database both ways a run goes: as the statement's text arrays, which pgx
// encodes (how every run of several rows went before COPY), and in COPY's
// text format.
func BenchmarkEncode(b *testing.B) {
	const n = 10000
	r := &run{table: &table{name: "bench", types: map[string]string{"id": "bigint", "a": "text", "b": "text", "n": "integer"}}, keys: []string{"id"}}
	for i := range n {
		r.rows = append(r.rows, row{key: map[string]any{"id": float64(i)}, values: map[string]any{"a": "row", "b": "a text column of moderate length", "n": float64(i % 1000)}})
	}
	r.columns = sortedKeys(r.rows[0].values, r.keys, nil)
	cols, bad := r.render()
	if bad != nil {
		b.Fatal(bad.err)
	}
	b.Run("text arrays", func(b *testing.B) {
		m := pgtype.NewMap()
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf = buf[:0]
			for _, a := range cols.args(nil, 0, n) {
				var err error
				if buf, err = m.Encode(pgtype.TextArrayOID, pgtype.BinaryFormatCode, a, buf); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("COPY text", func(b *testing.B) {
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf = cols.appendCopy(buf[:0], nil, 0, n)
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
	})
}
