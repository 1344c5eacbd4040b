package destination

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// concurrently runs f(0) to f(n-1), each on a goroutine of its own, and
// returns their errors once all have returned.
func concurrently(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	return errs
}

// gateTable makes the inserts into table gate wait, inside their
// statement, while a gate is closed (see [closeGate]): a Write whose batch
// starts with a record of gate is then held between planning its records
// and writing them.
const gateTable = `CREATE TABLE gate (id int);
	CREATE FUNCTION wait_at_gate() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN PERFORM pg_advisory_xact_lock_shared(42); RETURN NULL; END $$;
	CREATE TRIGGER wait_at_gate AFTER INSERT ON gate FOR EACH STATEMENT EXECUTE FUNCTION wait_at_gate();`

// gate holds the inserts into table gate of a database until it opens.
type gate struct {
	tx   pgx.Tx
	conn *pgx.Conn // the database's own, to watch who waits
}

// closeGate closes the gate of the database conn is connected to, on a
// connection of its own to url.
func closeGate(t *testing.T, url string, conn *pgx.Conn) *gate {
	t.Helper()
	is := is.New(t)
	lock, err := pgx.Connect(t.Context(), url)
	is.NoErr(err)
	t.Cleanup(func() { lock.Close(context.Background()) })
	tx, err := lock.Begin(t.Context())
	is.NoErr(err)
	_, err = tx.Exec(t.Context(), `SELECT pg_advisory_xact_lock(42)`)
	is.NoErr(err)
	return &gate{tx: tx, conn: conn}
}

// gateRecord is a record for table gate.
func gateRecord(pos string, id int) sdk.Record {
	r := rec(pos, sdk.OperationCreate, nil, sdk.StructuredData{"id": id})
	r.Metadata.SetCollection("gate")
	return r
}

// waitFor returns once n inserts wait at the gate. It asks the database
// again and again rather than sleeping between asks: each ask is a round
// trip, which the waiting Writes do not need.
func (g *gate) waitFor(t *testing.T, n int) {
	t.Helper()
	for {
		var waiting int
		err := g.conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
	}
}

// open lets the inserts waiting at the gate, and those to come, go on.
func (g *gate) open(t *testing.T) {
	t.Helper()
	if err := g.tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// openAtGate opens a destination with auto.create and auto.evolve on
// into a database of its own with table gate, and returns the database's
// URL and a connection to it too.
func openAtGate(t *testing.T) (string, *pgx.Conn, *Destination) {
	t.Helper()
	url, conn := server.Database(t, gateTable)
	d, err := New(Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	d.cfg.Auto.Create, d.cfg.Auto.Evolve = true, true
	if err := d.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Teardown(context.Background()) })
	return url, conn, d
}

// writeAtGate has writers Writes of d run at once, the i-th writing a
// record of table gate and then record(i), all held at the gate between
// planning their records and writing them until every one waits there. It
// returns once all have returned, failing the test if one failed or wrote
// fewer than its two records.
func writeAtGate(t *testing.T, ctx context.Context, d *Destination, url string, conn *pgx.Conn, writers int, record func(i int) sdk.Record) {
	t.Helper()
	g := closeGate(t, url, conn)
	var errs []error
	done := make(chan struct{})
	go func() {
		defer close(done)
		errs = concurrently(writers, func(i int) error {
			n, err := d.Write(ctx, []sdk.Record{gateRecord("g"+fmt.Sprint(i), i), record(i)})
			if err == nil && n != 2 {
				err = fmt.Errorf("wrote %d of 2", n)
			}
			return err
		})
	}()
	g.waitFor(t, writers)
	g.open(t)
	<-done
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Write %d: %v", i, err)
		}
	}
}

// sameRows fails the test unless got and want hold the same rows, in any
// order, and names the rows that differ.
func sameRows(t *testing.T, got, want []string) {
	t.Helper()
	got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	var missing, extra []string
	for i, j := 0, 0; i < len(got) || j < len(want); {
		switch {
		case j == len(want) || i < len(got) && got[i] < want[j]:
			extra = append(extra, got[i])
			i++
		case i == len(got) || want[j] < got[i]:
			missing = append(missing, want[j])
			j++
		default:
			i, j = i+1, j+1
		}
	}
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("%d rows, want %d: missing %d (first %q), unexpected %d (first %q)", len(got), len(want),
			len(missing), missing[:min(len(missing), 5)], len(extra), extra[:min(len(extra), 5)])
	}
}

// logLines returns a context whose connector log is kept, and the
// messages logged so far.
func logLines(t *testing.T) (context.Context, func() []string) {
	buf, lines := logged(t)
	return sdk.ContextWithLogger(t.Context(), slog.New(slog.NewTextHandler(buf, nil))), lines
}

// count is how many of lines contain s.
func count(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// TestConcurrentWrites has goroutines Write batches together, each with
// keys of its own (as the SDK's lanes by key hand them out), creating,
// updating and deleting its rows in successive Writes, and appending rows
// to a keyless table, so that statements over arrays, single rows and
// COPY (straight into the table and through the staging table) run side
// by side. The tables end exactly as the records say.
func TestConcurrentWrites(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	conn, d := setup(t, `CREATE TABLE kv (id bigint PRIMARY KEY, v text, n int); CREATE TABLE events (g int, i int)`, nil)
	const writers, writes = 8, 12
	ws := make([]*concurrentWriter, writers)
	for g := range ws {
		ws[g] = &concurrentWriter{g: g, rnd: rand.New(rand.NewPCG(uint64(g), 1)), model: map[int]string{}}
	}
	errs := concurrently(writers, func(g int) error {
		for w := range writes {
			batch := ws[g].batch(w)
			n, err := d.Write(ctx, batch)
			if err != nil || n != len(batch) {
				return fmt.Errorf("writer %d, write %d: wrote %d of %d: %v", g, w, n, len(batch), err)
			}
		}
		return nil
	})
	for _, err := range errs {
		is.NoErr(err)
	}
	var want []string
	for _, w := range ws {
		for id, row := range w.model {
			want = append(want, fmt.Sprintf("%d|%s", id, row))
		}
	}
	sameRows(t, pgtest.Rows(t, conn, `SELECT id, v, n FROM kv`), want)
	for g, w := range ws {
		is.Equal(pgtest.Rows(t, conn, fmt.Sprintf(`SELECT count(*), count(DISTINCT i) FROM events WHERE g = %d`, g)), []string{fmt.Sprintf("%d|%d", w.appended, w.appended)})
	}
}

// concurrentWriter makes the batches of one goroutine of
// TestConcurrentWrites, and keeps what they leave in the tables.
type concurrentWriter struct {
	g        int
	rnd      *rand.Rand
	pos      int
	model    map[int]string // its rows of kv: id → "v|n"
	appended int            // its rows of events
}

// batch returns the records of write w: mixed batches of 1 and 7 records;
// then a run of 150 creates, written through COPY (tried as a plain
// insert, then, for keys that exist, upserted through the staging table);
// then a run of 120 appends, through COPY straight into the table.
func (cw *concurrentWriter) batch(w int) []sdk.Record {
	size := []int{1, 7, 150, 120}[w%4]
	var batch []sdk.Record
	for range size {
		cw.pos++
		id := cw.g*100000 + cw.rnd.IntN(300)
		p := fmt.Sprintf("g%d-%d", cw.g, cw.pos)
		op := cw.rnd.IntN(10)
		switch w % 4 {
		case 2:
			op = 4
		case 3:
			op = 1
		}
		var r sdk.Record
		switch {
		case op == 0:
			r = rec(p, sdk.OperationDelete, sdk.StructuredData{"id": id}, nil)
			delete(cw.model, id)
		case op < 3:
			r = rec(p, sdk.OperationCreate, nil, sdk.StructuredData{"g": cw.g, "i": cw.pos})
			r.Metadata.SetCollection("events")
			batch = append(batch, r)
			cw.appended++
			continue
		default:
			v, n := fmt.Sprintf("%s-%d", p, w), cw.rnd.IntN(1000)
			operation := sdk.OperationUpdate
			if op < 6 {
				operation = sdk.OperationCreate
			}
			r = rec(p, operation, sdk.StructuredData{"id": id}, sdk.StructuredData{"v": v, "n": n})
			cw.model[id] = fmt.Sprintf("%s|%d", v, n)
		}
		r.Metadata.SetCollection("kv")
		batch = append(batch, r)
	}
	return batch
}

// TestConcurrentCreate: Writes that all find the table they write to
// missing at once (each held at the gate after planning its records)
// create it once, and every one of them writes its record.
func TestConcurrentCreate(t *testing.T) {
	is := is.New(t)
	const writers = 6
	url, conn, d := openAtGate(t)
	ctx, lines := logLines(t)
	cols := `[{"name":"id","type":"integer","notNull":true,"key":1},{"name":"name","type":"character varying(20)"}]`
	writeAtGate(t, ctx, d, url, conn, writers, func(i int) sdk.Record {
		fresh := described(fmt.Sprint(i), sdk.OperationSnapshot, cols, sdk.StructuredData{"id": i}, sdk.StructuredData{"id": i, "name": fmt.Sprintf("n%d", i)})
		fresh.Metadata.SetCollection("fresh")
		return fresh
	})
	is.Equal(count(lines(), "CREATE TABLE"), 1)
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*), count(DISTINCT id) FROM fresh`), []string{fmt.Sprintf("%d|%d", writers, writers)})
	is.Equal(columnTypes(t, conn, "fresh"), []string{"id integer not null", "name character varying(20)"})
}

// TestConcurrentEvolve: Writes that all need the same changes of a table
// at once (a column renamed, one added, one widened, as the source's
// postgres.columns says; another added from the values of records
// without it) make each once, and every record is written, to the table
// as it is after them.
func TestConcurrentEvolve(t *testing.T) {
	is := is.New(t)
	const writers = 6
	url, conn, d := openAtGate(t)
	ctx, lines := logLines(t)
	id := `{"name":"id","type":"integer","notNull":true,"key":1}`
	v1 := `[` + id + `,{"name":"a","type":"character varying(20)"},{"name":"n","type":"integer"}]`
	v2 := `[` + id + `,{"name":"a2","type":"character varying(20)","was":"a"},{"name":"n","type":"bigint"},{"name":"c","type":"numeric(10,2)"}]`
	_, err := d.Write(ctx, []sdk.Record{described("0", sdk.OperationCreate, v1, sdk.StructuredData{"id": 0}, sdk.StructuredData{"id": 0, "a": "zero", "n": 0})})
	is.NoErr(err)

	writeAtGate(t, ctx, d, url, conn, writers, func(i int) sdk.Record {
		k := i + 1
		if i%2 == 1 { // from another source: no postgres.columns, a column of its own
			r := rec(fmt.Sprint(k), sdk.OperationCreate, sdk.StructuredData{"id": k}, sdk.StructuredData{"extra": fmt.Sprint("e", k)})
			r.Metadata.SetCollection("t")
			return r
		}
		return described(fmt.Sprint(k), sdk.OperationCreate, v2, sdk.StructuredData{"id": k}, sdk.StructuredData{"id": k, "a2": fmt.Sprint("a", k), "n": int64(1) << 40, "c": "1.50"})
	})
	logs := lines()
	is.Equal(count(logs, "CREATE TABLE"), 1) // by the first, sequential Write
	is.Equal(count(logs, `RENAME COLUMN \"a\" TO \"a2\"`), 1)
	is.Equal(count(logs, `ADD COLUMN IF NOT EXISTS \"c\"`), 1)
	is.Equal(count(logs, `ALTER COLUMN \"n\" TYPE bigint`), 1)
	is.Equal(count(logs, `ADD COLUMN IF NOT EXISTS \"extra\"`), 1)
	is.Equal(len(logs), 5)
	sameRows(t, columnTypes(t, conn, "t"), []string{"id integer not null", "a2 character varying(20)", "n bigint", "c numeric(10,2)", "extra text"}) // in the order the changes were made
	is.Equal(pgtest.Rows(t, conn, `SELECT id, a2, n, c::text, extra FROM t ORDER BY id`), []string{
		"0|zero|0|<nil>|<nil>",
		"1|a1|1099511627776|1.50|<nil>", "2|<nil>|<nil>|<nil>|e2",
		"3|a3|1099511627776|1.50|<nil>", "4|<nil>|<nil>|<nil>|e4",
		"5|a5|1099511627776|1.50|<nil>", "6|<nil>|<nil>|<nil>|e6",
	})
}

// TestOlderRecordsKeepChanges: a record older than a change of its table
// (its postgres.columns describes the table as it was), written after the
// change, as a Write of another lane may write it, neither undoes the
// change nor adds a renamed column again: its values go to the columns
// as they are now. Changing a type back would cut the newer, longer
// values to fit.
func TestOlderRecordsKeepChanges(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, ``, nil)
	ctx, lines := logLines(t)
	id := `{"name":"id","type":"integer","notNull":true,"key":1}`
	v1 := `[` + id + `,{"name":"a","type":"character varying(20)"},{"name":"n","type":"integer"},{"name":"w","type":"character varying(10)"}]`
	v2 := `[` + id + `,{"name":"a2","type":"character varying(20)","was":"a"},{"name":"n","type":"text"},{"name":"w","type":"character varying(100)"}]`
	long := strings.Repeat("x", 50)
	for _, r := range []sdk.Record{
		described("1", sdk.OperationCreate, v1, sdk.StructuredData{"id": 1}, sdk.StructuredData{"id": 1, "a": "one", "n": 1, "w": "w1"}),
		described("3", sdk.OperationCreate, v2, sdk.StructuredData{"id": 3}, sdk.StructuredData{"id": 3, "a2": "three", "n": "three", "w": long}),
		described("2", sdk.OperationCreate, v1, sdk.StructuredData{"id": 2}, sdk.StructuredData{"id": 2, "a": "two", "n": 2, "w": "w2"}), // older than 3
		described("4", sdk.OperationCreate, v2, sdk.StructuredData{"id": 4}, sdk.StructuredData{"id": 4, "a2": "four", "n": "four", "w": "w4"}),
	} {
		n, err := d.Write(ctx, []sdk.Record{r})
		is.NoErr(err)
		is.Equal(n, 1)
	}
	is.Equal(columnTypes(t, conn, "t"), []string{"id integer not null", "a2 character varying(20)", "n text", "w character varying(100)"})
	is.Equal(pgtest.Rows(t, conn, `SELECT id, a2, n, w FROM t ORDER BY id`), []string{"1|one|1|w1", "2|two|2|w2", "3|three|three|" + long, "4|four|four|w4"})
	logs := lines()
	is.Equal(len(logs), 4) // the table made, then changed once
	is.True(strings.Contains(logs[0], "CREATE TABLE"))
	is.True(strings.Contains(logs[1], `RENAME COLUMN \"a\" TO \"a2\"`))
}

// The destination the connector builds tells the SDK it takes concurrent
// Writes, in lanes by key.
func TestWriteSplit(t *testing.T) {
	is := is.New(t)
	d, err := sdk.NewDestination(New).New(map[string]string{"url": "postgres://localhost/db"})
	is.NoErr(err)
	c, ok := d.(sdk.ConcurrentDestination)
	is.True(ok)
	is.Equal(c.WriteSplit(), sdk.SplitByKey)
}
