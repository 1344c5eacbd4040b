package destination

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/examples/postgres/source"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/matryer/is"
)

var server *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &server) }

// setup creates a database with the given tables and returns a connection
// to it and an opened destination with the given settings.
func setup(t *testing.T, ddl string, settings map[string]string) (*pgx.Conn, *Destination) {
	t.Helper()
	ctx := t.Context()
	url, conn := server.Database(t, ddl)
	raw := map[string]string{"url": url}
	for k, v := range settings {
		raw[k] = v
	}
	d, err := sdk.NewDestination(New).New(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Teardown(context.Background()) })
	return conn, d.(*Destination)
}

// opened is a destination with cfg, open until the test ends.
func opened(t *testing.T, cfg Config) *Destination {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Teardown(context.Background()) })
	return d
}

func rec(pos string, op sdk.Operation, key, after sdk.Data) sdk.Record {
	return sdk.Record{Position: sdk.Position(pos), Operation: op, Metadata: sdk.Metadata{}, Key: key, Payload: sdk.Change{After: after}}
}

func TestOperations(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE TABLE users (id bigint PRIMARY KEY, name text, age int, active boolean, seen timestamptz)`, map[string]string{"table": "users"})
	n, err := d.Write(t.Context(), []sdk.Record{
		rec("1", sdk.OperationCreate, sdk.StructuredData{"id": 1}, sdk.StructuredData{"name": "ann", "age": 31, "active": true, "seen": "2026-01-02T03:04:05Z"}),
		rec("2", sdk.OperationSnapshot, sdk.RawData(`{"id": 2}`), sdk.RawData(`{"name": "bob", "age": 40}`)),
		rec("3", sdk.OperationCreate, sdk.StructuredData{"id": 3}, sdk.StructuredData{"name": "cid"}),
		rec("4", sdk.OperationUpdate, sdk.StructuredData{"id": 1}, sdk.StructuredData{"name": "ann", "age": 32, "active": false, "seen": nil}),
		rec("5", sdk.OperationDelete, sdk.StructuredData{"id": 3}, nil),
		rec("6", sdk.OperationUpdate, sdk.RawData(`{"id": 4}`), sdk.RawData(`{"name": "dee"}`)), // an update of a missing row inserts it
		// Over the protocol, structured numbers arrive as doubles.
		rec("7", sdk.OperationCreate, sdk.StructuredData{"id": float64(1533676440)}, sdk.StructuredData{"age": float64(7)}),
	})
	is.NoErr(err)
	is.Equal(n, 7)
	is.Equal(pgtest.Rows(t, conn, `SELECT id, name, age, active, seen IS NULL FROM users ORDER BY id`), []string{
		"1|ann|32|false|true",
		"2|bob|40|<nil>|true",
		"4|dee|<nil>|<nil>|true",
		"1533676440|<nil>|7|<nil>|true",
	})
}

func TestKeysAndNames(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `
		CREATE SCHEMA "Sales";
		CREATE TABLE "Sales"."Order Lines" (order_id int, line int, "Item" text, PRIMARY KEY (order_id, line));
		CREATE TABLE events (at text, what text)`, nil)
	lines := func(pos string, op sdk.Operation, order, line int, item any) sdk.Record {
		r := rec(pos, op, sdk.StructuredData{"order_id": order, "line": line}, sdk.StructuredData{"Item": item})
		r.Metadata.SetCollection(`"Sales"."Order Lines"`)
		return r
	}
	event := func(pos, what string) sdk.Record {
		r := rec(pos, sdk.OperationCreate, nil, sdk.StructuredData{"at": pos, "what": what})
		r.Metadata.SetCollection("events")
		return r
	}
	n, err := d.Write(t.Context(), []sdk.Record{
		lines("1", sdk.OperationCreate, 1, 1, "apple"),
		lines("2", sdk.OperationCreate, 1, 2, "pear"),
		event("3", "opened"),
		event("4", "opened"), // no key: plain inserts, both kept
		lines("5", sdk.OperationCreate, 1, 1, "plum"),
		lines("6", sdk.OperationCreate, 1, 1, "fig"), // same key twice in a run: the last wins
		lines("7", sdk.OperationDelete, 1, 2, nil),
		lines("8", sdk.OperationCreate, 1, 2, "kiwi"), // re-created after its delete: order matters
	})
	is.NoErr(err)
	is.Equal(n, 8)
	is.Equal(pgtest.Rows(t, conn, `SELECT order_id, line, "Item" FROM "Sales"."Order Lines" ORDER BY 1, 2`), []string{"1|1|fig", "1|2|kiwi"})
	is.Equal(pgtest.Rows(t, conn, `SELECT at, what FROM events ORDER BY at`), []string{"3|opened", "4|opened"})
}

// Keys whose parts run together the same way are still different keys, and
// Write leaves the records it writes as they were.
func TestCompositeKeysAndRecordsUnchanged(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE TABLE t (a text, b text, n int, PRIMARY KEY (a, b))`, map[string]string{"table": "t"})
	batch := []sdk.Record{
		rec("1", sdk.OperationCreate, sdk.StructuredData{"a": "ab", "b": "c"}, sdk.StructuredData{"n": 1}),
		rec("2", sdk.OperationCreate, sdk.StructuredData{"a": "a", "b": "bc"}, sdk.StructuredData{"n": 2}),
		rec("3", sdk.OperationCreate, sdk.StructuredData{"a": "1:a", "b": ""}, sdk.StructuredData{"n": 3}),
		rec("4", sdk.OperationCreate, sdk.StructuredData{"a": "1", "b": "a0:"}, sdk.StructuredData{"n": 4}),
		rec("5", sdk.OperationCreate, sdk.StructuredData{"a": "a", "b": "bc"}, sdk.StructuredData{"n": 5}),
	}
	n, err := d.Write(t.Context(), batch)
	is.NoErr(err)
	is.Equal(n, 5)
	is.Equal(pgtest.Rows(t, conn, `SELECT a, b, n FROM t ORDER BY a, b`), []string{"1|a0:|4", "1:a||3", "a|bc|5", "ab|c|1"})
	is.Equal(batch[0].Payload.After, sdk.StructuredData{"n": 1}) // the key's columns were not added to the payload
	is.Equal(batch[0].Key, sdk.StructuredData{"a": "ab", "b": "c"})
}

// Creates are tried as plain inserts first; rows that exist already make
// them upserts, and a unique constraint other than the key still fails at
// the record that breaks it.
func TestCreatesOfExistingRows(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE TABLE t (id int PRIMARY KEY, email text UNIQUE, n int);
		INSERT INTO t VALUES (1, 'a@x', 0), (2, 'b@x', 0)`, map[string]string{"table": "t"})
	n, err := d.Write(t.Context(), []sdk.Record{
		rec("1", sdk.OperationCreate, sdk.StructuredData{"id": 3}, sdk.StructuredData{"email": "c@x", "n": 1}),
		rec("2", sdk.OperationSnapshot, sdk.StructuredData{"id": 1}, sdk.StructuredData{"email": "a@x", "n": 2}), // exists
	})
	is.NoErr(err)
	is.Equal(n, 2)
	n, err = d.Write(t.Context(), []sdk.Record{
		rec("3", sdk.OperationCreate, sdk.StructuredData{"id": 4}, sdk.StructuredData{"email": "d@x", "n": 3}),
		rec("4", sdk.OperationCreate, sdk.StructuredData{"id": 5}, sdk.StructuredData{"email": "b@x", "n": 4}), // email taken
		rec("5", sdk.OperationCreate, sdk.StructuredData{"id": 6}, sdk.StructuredData{"email": "e@x", "n": 5}),
	})
	is.Equal(n, 1)
	is.True(err != nil && strings.Contains(err.Error(), `record at position "4": table t: duplicate key value violates unique constraint "t_email_key"`))
	is.Equal(pgtest.Rows(t, conn, `SELECT id, email, n FROM t ORDER BY id`), []string{"1|a@x|2", "2|b@x|0", "3|c@x|1", "4|d@x|3"})
}

func TestInsertFirstBacksOff(t *testing.T) {
	is := is.New(t)
	var f insertFirst
	tries := func(runs int) (n int) {
		for range runs {
			if f.try() {
				n++
			}
		}
		return n
	}
	is.Equal(tries(3), 3) // no conflicts yet: every run tries
	f.failed()
	is.Equal(tries(2), 1) // skips 1
	f.failed()
	is.Equal(tries(3), 1) // skips 2
	for range 10 {
		f.failed()
	}
	is.Equal(tries(65), 1) // skips at most 64
	f.succeeded()
	f.failed()
	is.Equal(tries(2), 1) // a success starts over
}

// Columns named like the statement's own aliases do not confuse it: the
// delete below stays one statement (a second would fail on the trigger).
func TestColumnsNamedLikeAliases(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE TABLE t (id int PRIMARY KEY, v1 text, s text);
		INSERT INTO t VALUES (1, 'a', 'x'), (2, 'b', 'y'), (3, 'c', 'z');
		CREATE TABLE statements (n int);
		CREATE FUNCTION count_statement() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO statements VALUES (1); RETURN NULL; END $$;
		CREATE TRIGGER per_statement AFTER DELETE ON t FOR EACH STATEMENT EXECUTE FUNCTION count_statement()`, map[string]string{"table": "t"})
	n, err := d.Write(t.Context(), []sdk.Record{
		rec("1", sdk.OperationDelete, sdk.StructuredData{"id": 1}, nil),
		rec("2", sdk.OperationDelete, sdk.StructuredData{"id": 2}, nil),
	})
	is.NoErr(err)
	is.Equal(n, 2)
	is.Equal(pgtest.Rows(t, conn, `SELECT id, v1, s FROM t`), []string{"3|c|z"})
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*) FROM statements`), []string{"1"})
}

func TestConfiguredKey(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE TABLE t (code text PRIMARY KEY, n int)`, map[string]string{"table": "t", "key": "code"})
	n, err := d.Write(t.Context(), []sdk.Record{
		rec("1", sdk.OperationCreate, nil, sdk.RawData(`{"code": "a", "n": 1}`)),
		rec("2", sdk.OperationCreate, nil, sdk.RawData(`{"code": "a", "n": 2}`)),
		rec("3", sdk.OperationCreate, sdk.RawData("b"), sdk.RawData(`{"n": 3}`)), // a plain raw key is the key column's value
	})
	is.NoErr(err)
	is.Equal(n, 3)
	is.Equal(pgtest.Rows(t, conn, `SELECT code, n FROM t ORDER BY code`), []string{"a|2", "b|3"})
}

// TestPoisonRecords puts a record the database rejects at the start, the
// middle and the end of a batch: the records before it are committed and
// acked, and the error names it, its table and the database's reason.
func TestPoisonRecords(t *testing.T) {
	for _, at := range []int{0, 3, 5} {
		t.Run(fmt.Sprintf("at %d", at), func(t *testing.T) {
			is := is.New(t)
			conn, d := setup(t, `CREATE TABLE t (id int PRIMARY KEY, n int NOT NULL)`, map[string]string{"table": "t"})
			var batch []sdk.Record
			for i := range 6 {
				n := any(i)
				if i == at {
					n = "not a number"
				}
				batch = append(batch, rec(fmt.Sprint(i), sdk.OperationCreate, sdk.StructuredData{"id": i}, sdk.StructuredData{"n": n}))
			}
			n, err := d.Write(t.Context(), batch)
			is.Equal(n, at)
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), fmt.Sprintf(`record at position "%d": table t: column "n" (integer): invalid input syntax for type integer: "not a number"`, at)))
			is.True(sdk.IsRecordFault(err))
			is.Equal(len(pgtest.Rows(t, conn, `SELECT id FROM t`)), at) // exactly the records before it
		})
	}
}

// With auto.create and auto.evolve off, a missing table or column is the
// fault of the record that names it.
func TestMissingTableAndColumn(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE TABLE t (id int PRIMARY KEY)`, map[string]string{"auto.create": "false", "auto.evolve": "false"})
	r := rec("1", sdk.OperationCreate, sdk.StructuredData{"id": 1}, nil)
	r.Metadata.SetCollection("t")
	missing := rec("2", sdk.OperationCreate, sdk.StructuredData{"id": 2}, nil)
	missing.Metadata.SetCollection("nope")
	n, err := d.Write(t.Context(), []sdk.Record{r, missing})
	is.Equal(n, 1)
	is.True(strings.Contains(err.Error(), `record at position "2": table nope does not exist`))
	is.Equal(pgtest.Rows(t, conn, `SELECT id FROM t`), []string{"1"})

	extra := rec("3", sdk.OperationCreate, sdk.StructuredData{"id": 3}, sdk.StructuredData{"colour": "red"})
	extra.Metadata.SetCollection("t")
	n, err = d.Write(t.Context(), []sdk.Record{extra})
	is.Equal(n, 0)
	is.True(strings.Contains(err.Error(), `record at position "3": column "colour" does not exist in table t`))

	bad := rec("4", sdk.OperationCreate, sdk.RawData("id=4"), nil)
	bad.Metadata.SetCollection("t")
	_, err = d.Write(t.Context(), []sdk.Record{bad})
	is.True(strings.Contains(err.Error(), `record at position "4": the key: sdk: the data is raw but not a JSON object`))
}

// An upsert needs a constraint on the key columns; deleting by key does not.
func TestKeyWithoutConstraint(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE TABLE t (id int, n int, UNIQUE (id, n)); INSERT INTO t VALUES (1, 1), (2, 2)`, map[string]string{"table": "t"})
	for _, op := range []sdk.Operation{sdk.OperationCreate, sdk.OperationUpdate} {
		n, err := d.Write(t.Context(), []sdk.Record{rec("1", op, sdk.StructuredData{"id": 3}, sdk.StructuredData{"n": 3})})
		is.Equal(n, 0)
		is.True(err != nil && strings.Contains(err.Error(), `record at position "1": table t has no primary key or unique constraint on exactly the key columns (id)`))
	}
	n, err := d.Write(t.Context(), []sdk.Record{
		rec("2", sdk.OperationDelete, sdk.StructuredData{"id": 1}, nil),
		rec("3", sdk.OperationCreate, sdk.StructuredData{"id": 4, "n": 4}, nil), // the key matches the constraint
	})
	is.NoErr(err)
	is.Equal(n, 2)
	is.Equal(pgtest.Rows(t, conn, `SELECT id, n FROM t ORDER BY id`), []string{"2|2", "4|4"})
}

// TestServerRestartedMidStream restarts PostgreSQL between two writes:
// the write on a dropped connection is retryable, and its retry goes
// through on a fresh one.
func TestServerRestartedMidStream(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE TABLE t (id int PRIMARY KEY)`, map[string]string{"table": "t"})
	_, err := d.Write(t.Context(), []sdk.Record{rec("1", sdk.OperationCreate, sdk.StructuredData{"id": 1}, nil)})
	is.NoErr(err)
	is.NoErr(server.Restart())
	is.NoErr(server.WaitReady(t.Context()))
	out, err := driveWrite(t.Context(), d, []sdk.Record{rec("2", sdk.OperationCreate, sdk.StructuredData{"id": 2}, nil)}, 1)
	is.NoErr(err)
	is.Equal(len(out.Faults), 0)
	conn.Close(t.Context())
	conn, err = pgx.Connect(t.Context(), d.cfg.URL)
	is.NoErr(err)
	defer conn.Close(t.Context())
	is.Equal(pgtest.Rows(t, conn, `SELECT id FROM t ORDER BY id`), []string{"1", "2"})
}

func TestPasswordNeverShown(t *testing.T) {
	d, err := New(Config{URL: "postgres://user:s3cret-pw@127.0.0.1:1/db?connect_timeout=1"})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Open(t.Context())
	if err == nil || strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("got %v", err)
	}
	_, err = New(Config{URL: "postgres://user:s3cret-pw@127.0.0.1:notaport/db"})
	if err == nil || strings.Contains(err.Error(), "s3cret-pw") || !strings.Contains(err.Error(), `parameter "url"`) {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkWrite measures Write in process: batches of upserts into a
// 4-column table, as the plugin gets them from the batching middleware,
// with and without exactly-once. A batch of one is a message of the v2
// engine from a source without batch settings. cpu-µs/row is the
// process's processor time per row, PostgreSQL's not included.
func BenchmarkWrite(b *testing.B) {
	for _, size := range []int{1, 100, 10000} {
		for _, once := range []bool{false, true} {
			b.Run(fmt.Sprintf("batch=%d,exactlyOnce=%t", size, once), func(b *testing.B) { benchmarkWrite(b, size, once) })
		}
	}
}

func benchmarkWrite(b *testing.B, size int, once bool) {
	url, _ := server.Database(b, `CREATE TABLE bench (id bigint PRIMARY KEY, a text, b text, n int)`)
	b.Setenv(pconnector.EnvConduitConnectorID, "bench")
	dd, err := sdk.NewDestination(New).New(map[string]string{"url": url, "table": "bench", "exactlyOnce.enabled": strconv.FormatBool(once)})
	if err != nil {
		b.Fatal(err)
	}
	d := dd.(*Destination)
	if err := d.Open(b.Context()); err != nil {
		b.Fatal(err)
	}
	defer d.Teardown(context.Background())
	batch := make([]sdk.Record, size)
	id := 0
	b.ReportAllocs()
	cpu := processCPU(b)
	for b.Loop() {
		for i := range batch {
			id++
			batch[i] = rec(fmt.Sprint(id), sdk.OperationCreate, sdk.StructuredData{"id": float64(id)},
				sdk.StructuredData{"a": "row", "b": "a text column of moderate length", "n": float64(id % 1000)})
		}
		if _, err := d.Write(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N*size), "cpu-µs/row")
}

// processCPU returns the processor time the process has used so far.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

type sentNothing struct{}

func (sentNothing) Error() string     { return "failed to connect" }
func (sentNothing) SafeToRetry() bool { return true }

// A failure is the record's when the database rejected its data, and
// retryable when the system failed and asking again cannot write a row
// twice: a statement that is idempotent, or cannot have committed.
func TestClassify(t *testing.T) {
	reset := errors.New("read: connection reset by peer")
	pg := func(code string) error { return &pgconn.PgError{Code: code, Message: "m"} }
	for _, tc := range []struct {
		err     error
		classes []class
		data    bool
		retry   bool
	}{
		{reset, []class{upsert, create, remove}, false, true},
		{reset, []class{insert}, false, false}, // may have committed: a retry could duplicate rows
		{sentNothing{}, []class{insert, upsert}, false, true},
		{pg("57P01"), []class{insert, upsert}, false, true}, // the server reported it: not committed
		{pg("57P03"), []class{insert}, false, true},
		{pg("40001"), []class{insert}, false, true},
		{pg("40P01"), []class{insert}, false, true},
		{pg("08006"), []class{insert}, false, true},
		{pg("53300"), []class{insert}, false, true},
		{pg("57P04"), []class{insert}, false, false}, // the database was dropped
		{pg("42501"), []class{insert}, false, false}, // permission denied
		{pg("23505"), []class{insert, upsert}, true, false},
		{pg("23514"), []class{insert}, true, false},
		{pg("22001"), []class{insert}, true, false},
		{pg("22021"), []class{insert}, true, false},
	} {
		for _, c := range tc.classes {
			t.Run(fmt.Sprintf("%v/%d", tc.err, c), func(t *testing.T) {
				is := is.New(t)
				is.Equal(isDataError(tc.err), tc.data)
				d := &Destination{}
				r := &run{class: c, table: &table{name: "t"}, rows: []row{{position: sdk.Position("p")}}}
				err := d.systemError(r, 0, tc.err)
				is.Equal(sdk.IsRetryable(err), tc.retry)
				is.True(strings.HasPrefix(err.Error(), `record at position "p": table t: `))
			})
		}
	}
}

// A refused connection leads with the server's reason, not with the TLS
// attempt that sslmode=prefer makes first, in the destination and the
// source alike.
func TestConnectionErrorLeadsWithReason(t *testing.T) {
	url := strings.Replace(strings.Replace(server.URL, "postgres@", "nouser:s3cret-pw@", 1), "sslmode=disable", "sslmode=prefer", 1)
	want := `connect to PostgreSQL: role "nouser" does not exist [SQLSTATE 28000] (connecting to 127.0.0.1:`
	d, err := New(Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Open(t.Context())
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "s3cret-pw") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("destination: got %v, want one line starting %q", err, want)
	}
	s, err := source.New(source.Config{URL: url, Tables: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Open(t.Context(), nil)
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("source: got %v, want one line starting %q", err, want)
	}
}

// The pool has a connection for each Write the SDK may keep in flight,
// unless the URL says otherwise.
func TestPoolSize(t *testing.T) {
	is := is.New(t)
	url, _ := server.Database(t, "")
	for _, c := range []struct {
		url  string
		want int32
	}{
		{url, poolSize},
		{url + "&pool_max_conns=3", 3},
	} {
		d, err := New(Config{URL: c.url})
		is.NoErr(err)
		is.NoErr(d.Open(t.Context()))
		is.Equal(d.pool.Config().MaxConns, c.want)
		is.NoErr(d.Teardown(t.Context()))
	}
}

// The destination's connections show in pg_stat_activity under its name,
// so that an operator can tell them from other clients' and count them,
// unless the URL names them itself, in its query or in a key/value string.
func TestConnectionsNamed(t *testing.T) {
	for _, c := range []struct {
		name string
		url  func(url string) string
		want string
	}{
		{"by default", func(url string) string { return url }, "connkit-postgres-destination"},
		{"named in the URL", func(url string) string { return url + "&application_name=orders-copy" }, "orders-copy"},
		{"a key/value string", keyValue, "connkit-postgres-destination"},
		{"named in a key/value string", func(url string) string { return keyValue(url) + " application_name='orders copy'" }, "orders copy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			url, conn := server.Database(t, `CREATE TABLE t (id int PRIMARY KEY)`)
			d, err := New(Config{URL: c.url(url), Table: "t"})
			is.NoErr(err)
			is.NoErr(d.Open(t.Context()))
			defer d.Teardown(context.Background())
			_, err = d.Write(t.Context(), []sdk.Record{rec("1", sdk.OperationCreate, sdk.StructuredData{"id": 1}, sdk.StructuredData{})})
			is.NoErr(err)
			// The database is the test's own: its clients are the
			// destination and the test's connection.
			is.Equal(pgtest.Rows(t, conn, `SELECT application_name FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`), []string{c.want})
		})
	}
}

// keyValue spells a postgres:// URL as a key/value connection string.
func keyValue(url string) string {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("host=%s port=%d dbname=%s user=%s sslmode=disable", cfg.Host, cfg.Port, cfg.Database, cfg.User)
}
