package destination

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/sdktest"
	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// outcome is what the SDK makes of the Writes of a stream of records:
// the records nacked alone, each with its error, by index in the stream,
// and how many times it retried.
type outcome struct {
	Faults  map[int]error
	Retries int
}

// driveWrite hands records to d in batches of size, as the SDK does: after
// a record's fault at n it acks the records before n, nacks n alone and
// writes the rest of the batch with the next Write; after a retryable
// error at n it writes records[n:] again. Any other error, a broken
// contract or more than ten retries in a row ends it.
func driveWrite(ctx context.Context, d sdk.Destination, records []sdk.Record, size int) (outcome, error) {
	out := outcome{Faults: map[int]error{}}
	for start := 0; start < len(records); start += size {
		batch, i, retries := records[start:min(start+size, len(records))], 0, 0
		for i < len(batch) {
			n, err := d.Write(ctx, batch[i:])
			switch {
			case n < 0 || n > len(batch)-i:
				return out, fmt.Errorf("Write returned n = %d for %d records", n, len(batch)-i)
			case err == nil && n < len(batch)-i:
				return out, fmt.Errorf("Write returned n = %d for %d records and no error", n, len(batch)-i)
			}
			i += n
			switch {
			case err == nil:
			case sdk.IsRecordFault(err):
				out.Faults[start+i] = err
				i, retries = i+1, 0
			case sdk.IsRetryable(err) && retries < 10:
				out.Retries++
				retries++
			default:
				return out, fmt.Errorf("record %d: %w", start+i, err)
			}
		}
	}
	return out, nil
}

const faultsTable = `CREATE TABLE faults (
	id int,
	vc varchar(5),
	ch char(3),
	small smallint,
	n int,
	t text,
	nn text NOT NULL,
	u text UNIQUE,
	c int CHECK (c >= 0)
)`

// TestRecordFaults puts one bad value of each kind at the start, the
// middle and the end of 100 records, written in batches of 1, 10 and
// 1000, keyed (upserts) and not (plain inserts): the database, not the
// connector, decides what fits, nothing is cut, rounded or replaced to
// make it fit, and only the bad record fails, with its position, its
// column, the column's type and the database's reason; the 99 others are
// in the table, exactly as they were sent.
func TestRecordFaults(t *testing.T) {
	url, conn := server.Database(t, faultsTable)
	for _, bad := range []badValue{
		{"varchar overflow", "vc", "abcdef", `column "vc" (character varying(5)): value too long for type character varying(5) [SQLSTATE 22001]`},
		{"varchar overflow in characters", "vc", "ééééé\u00e9", `column "vc" (character varying(5)): value too long`},
		{"char overflow", "ch", "abcd", `column "ch" (character(3)): value too long for type character(3) [SQLSTATE 22001]`},
		{"smallint out of range", "small", 32768, `column "small" (smallint): value "32768" is out of range for type smallint [SQLSTATE 22003]`},
		{"integer out of range", "n", int64(1) << 31, `column "n" (integer): value "2147483648" is out of range for type integer [SQLSTATE 22003]`},
		{"fraction into integer", "n", 1.5, `column "n" (integer): invalid input syntax for type integer: "1.5" [SQLSTATE 22P02]`},
		{"invalid UTF-8", "t", "a\xffb", `column "t" (text): not valid UTF-8 text (refused: replacing the invalid bytes would change it)`},
		{"NUL in text", "t", "a\x00b", `column "t" (text): invalid byte sequence for encoding "UTF8": 0x00 [SQLSTATE 22021]`},
		{"NOT NULL", "nn", nil, `column "nn" (text): null value in column "nn" of relation "faults" violates not-null constraint`},
		{"unique", "u", "taken", `duplicate key value violates unique constraint "faults_u_key" (Key (u)=(taken) already exists.) [SQLSTATE 23505]`},
		{"check", "c", -1, `new row for relation "faults" violates check constraint "faults_c_check"`},
	} {
		for _, keyed := range []bool{true, false} {
			d := openFaults(t, url, conn, keyed)
			for _, size := range []int{1, 10, 1000} {
				for _, k := range []int{0, 50, 99} {
					t.Run(fmt.Sprintf("%s/keyed=%t/batch=%d/at=%d", bad.name, keyed, size, k), func(t *testing.T) {
						bad.check(t, conn, d, keyed, size, k)
					})
				}
			}
			d.Teardown(context.Background())
		}
	}
}

// badValue is a value that the faults table refuses in column col, with
// the error that says so.
type badValue struct {
	name  string
	col   string
	value any
	want  string
}

// openFaults opens a destination of the faults table, keyed by id or not,
// as is the table.
func openFaults(t *testing.T, url string, conn *pgx.Conn, keyed bool) *Destination {
	settings := map[string]string{"url": url, "table": "faults"}
	if keyed {
		settings["key"] = "id"
	}
	dd, err := sdk.NewDestination(New).New(settings)
	if err != nil {
		t.Fatal(err)
	}
	d := dd.(*Destination)
	if err := d.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, conn, `ALTER TABLE faults DROP CONSTRAINT IF EXISTS faults_pkey`)
	if keyed {
		pgtest.Exec(t, conn, `ALTER TABLE faults ADD PRIMARY KEY (id)`)
	}
	return d
}

// check writes 100 good records in batches of size, but record k with the
// bad value, and checks that record k alone fails, with the error of the
// bad value, and every other one is written.
func (bad badValue) check(t *testing.T, conn *pgx.Conn, d *Destination, keyed bool, size, k int) {
	is := is.New(t)
	_, err := conn.Exec(t.Context(), `TRUNCATE faults; INSERT INTO faults (id, nn, u) VALUES (-1, 'x', 'taken')`)
	is.NoErr(err)
	var records []sdk.Record
	for i := range 100 {
		payload := goodFault(i)
		if i == k {
			payload[bad.col] = bad.value
		}
		var key sdk.Data
		if keyed {
			key = sdk.StructuredData{"id": i}
		}
		records = append(records, rec(fmt.Sprint(i), sdk.OperationCreate, key, payload))
	}
	out, err := driveWrite(t.Context(), d, records, size)
	is.NoErr(err)
	is.Equal(out.Retries, 0)
	is.Equal(len(out.Faults), 1)
	ferr := out.Faults[k]
	if ferr == nil || !strings.Contains(ferr.Error(), fmt.Sprintf(`record at position "%d": table faults: `, k)) || !strings.Contains(ferr.Error(), bad.want) {
		t.Fatalf("failures %v, want one at %d containing %q", out.Faults, k, bad.want)
	}
	var want []string
	for i := range 100 {
		if i != k {
			want = append(want, fmt.Sprintf("%d|abcde|ab |-32768|%d|ok \u00e9\U0001F600|x|u%d|%d", i, i, i, i))
		}
	}
	is.Equal(pgtest.Rows(t, conn, `SELECT id, vc, ch, small, n, t, nn, u, c FROM faults WHERE id >= 0 ORDER BY id`), want)
}

// goodFault is row i of the faults table, which it takes.
func goodFault(i int) sdk.StructuredData {
	return sdk.StructuredData{"id": i, "vc": "abcde", "ch": "ab", "small": -32768, "n": i, "t": "ok \u00e9\U0001F600", "nn": "x", "u": fmt.Sprintf("u%d", i), "c": i}
}

// TestTruncatingCastsAvoided: the values that an explicit cast to the
// column's type would change (cut a varchar or char, pad or cut a bit
// string) fail; those that fit are written as they are, and a delete by a
// key too long for its column deletes nothing rather than the row it would
// be cut to.
func TestTruncatingCastsAvoided(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `CREATE TABLE cut (k varchar(3) PRIMARY KEY, b bit(4), a varchar(2)[])`, map[string]string{"table": "cut"})
	ctx := t.Context()
	for _, c := range []struct {
		payload sdk.StructuredData
		want    string
	}{
		{sdk.StructuredData{"k": "abc", "b": "10"}, `column "b" (bit(4)): bit string length 2 does not match type bit(4) [SQLSTATE 22026]`},
		{sdk.StructuredData{"k": "abc", "b": "101010"}, `column "b" (bit(4)): bit string length 6 does not match type bit(4)`},
		{sdk.StructuredData{"k": "abc", "a": "{ab,abc}"}, `column "a" (character varying(2)[]): value too long for type character varying(2)`},
		{sdk.StructuredData{"k": "abcd"}, `column "k" (character varying(3)): value too long`},
	} {
		n, err := d.Write(ctx, []sdk.Record{rec("p", sdk.OperationCreate, nil, c.payload)})
		is.Equal(n, 0)
		is.True(sdk.IsRecordFault(err))
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	n, err := d.Write(ctx, []sdk.Record{rec("p", sdk.OperationCreate, nil, sdk.StructuredData{"k": "abc", "b": "1010", "a": "{ab,c}"})})
	is.NoErr(err)
	is.Equal(n, 1)
	n, err = d.Write(ctx, []sdk.Record{rec("d", sdk.OperationDelete, sdk.StructuredData{"k": "abcd"}, nil)})
	is.NoErr(err)
	is.Equal(n, 1)
	is.Equal(pgtest.Rows(t, conn, `SELECT k, b::text, a::text FROM cut`), []string{"abc|1010|{ab,c}"})
}

// killedAtSecond creates a table second (id int) whose first insert
// statement has its backend terminated under it, as at a shutdown.
const killedAtSecond = `
		CREATE TABLE second (id int);
		CREATE SEQUENCE kills;
		CREATE FUNCTION kill_once() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF nextval('kills') = 1 THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF;
			RETURN NULL;
		END $$;
		CREATE TRIGGER kill_once BEFORE INSERT ON second FOR EACH STATEMENT EXECUTE FUNCTION kill_once()`

// A statement that the server ends (its backend is terminated under it,
// as at a shutdown) in the middle of a batch is retryable from the first
// record of the statement, and the records before it are written: writing
// the rest again writes every record exactly once, plain inserts included.
func TestTerminatedMidBatchIsRetryable(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	conn, d := setup(t, `CREATE TABLE first (id int);`+killedAtSecond, map[string]string{"reconnect.timeout": "0"}) // else Write itself writes the rest again
	var records []sdk.Record
	for i := range 100 {
		table := "first"
		if i >= 40 {
			table = "second"
		}
		r := rec(fmt.Sprint(i), sdk.OperationCreate, nil, sdk.StructuredData{"id": i})
		r.Metadata.SetCollection(table)
		records = append(records, r)
	}
	n, err := d.Write(ctx, records)
	is.Equal(n, 40)
	is.True(sdk.IsRetryable(err))
	is.True(!sdk.IsRecordFault(err))
	is.True(strings.Contains(err.Error(), `record at position "40": table second: terminating connection due to administrator command [SQLSTATE 57P01]`))
	n, err = d.Write(ctx, records[n:])
	is.NoErr(err)
	is.Equal(n, 60)
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*), count(DISTINCT id) FROM (SELECT id FROM first UNION ALL SELECT id FROM second) AS s`), []string{"100|100"})
}

// A server restart between the Writes of a stream costs no record and
// duplicates none: what the destination cannot write is retryable, and
// the stream goes on once the server is back.
func TestServerRestart(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	own, err := pgtest.Start()
	is.NoErr(err)
	t.Cleanup(func() { _ = own.Stop() })
	url, conn := own.Database(t, `CREATE TABLE plain (id int); CREATE TABLE keyed (id int PRIMARY KEY)`)
	var records []sdk.Record
	for i := range 300 {
		r := rec(fmt.Sprint(i), sdk.OperationCreate, sdk.StructuredData{"id": i}, sdk.StructuredData{"id": i})
		if i%20 < 10 {
			r.Key = nil
			r.Metadata.SetCollection("plain")
		} else {
			r.Metadata.SetCollection("keyed")
		}
		records = append(records, r)
	}
	dd, err := sdk.NewDestination(New).New(map[string]string{"url": url})
	is.NoErr(err)
	is.NoErr(dd.Open(ctx))
	defer dd.Teardown(context.Background())
	restarts := 0
	d := restartAt{Destination: dd, at: map[int]bool{25: true, 150: true}, restart: func() error {
		conn.Close(ctx)
		restarts++
		if err := own.Restart(); err != nil {
			return err
		}
		return own.WaitReady(ctx)
	}}
	_, err = driveWrite(ctx, &d, records, 50)
	is.NoErr(err)
	is.Equal(restarts, 2)
	check, err := pgx.Connect(ctx, url)
	is.NoErr(err)
	defer check.Close(context.Background())
	is.Equal(pgtest.Rows(t, check, `SELECT count(*), count(DISTINCT id) FROM (SELECT id FROM plain UNION ALL SELECT id FROM keyed) AS s`), []string{"300|300"})
}

// restartAt restarts the server before the Write that starts at one of
// the given records (counted across Writes).
type restartAt struct {
	sdk.Destination
	at      map[int]bool
	seen    int
	restart func() error
}

func (r *restartAt) Write(ctx context.Context, records []sdk.Record) (int, error) {
	for i := r.seen; i < r.seen+len(records); i++ {
		if r.at[i] {
			delete(r.at, i)
			if err := r.restart(); err != nil {
				return 0, errors.Join(errors.New("restart"), err)
			}
		}
	}
	n, err := r.Destination.Write(ctx, records)
	r.seen += n
	if sdk.IsRecordFault(err) {
		r.seen++
	}
	return n, err
}

// A connection that breaks between two writes costs nothing: the
// destination reports the statement retryable, and the SDK's retry goes
// through on a fresh connection.
func TestWriteSurvivesADroppedConnection(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	dbURL, conn := server.Database(t, `CREATE TABLE sdktest (id bigint PRIMARY KEY, name text)`)
	u, err := url.Parse(dbURL)
	is.NoErr(err)
	proxy, err := sdktest.NewProxy(u.Host)
	is.NoErr(err)
	defer proxy.Close()
	u.Host = proxy.Addr()

	dst, err := sdk.NewDestination(New).New(map[string]string{"url": u.String(), "table": "sdktest"})
	is.NoErr(err)
	d := sdktest.DropAt(dst, 5, proxy.Drop)
	is.NoErr(d.Open(ctx))
	defer d.Teardown(context.Background())

	var recs []sdk.Record
	for i := range 10 {
		recs = append(recs, sdktest.TestRecord(i, sdk.OperationCreate, i%2 == 0))
	}
	n, err := d.Write(ctx, recs[:5])
	is.NoErr(err)
	is.Equal(n, 5)
	out, err := driveWrite(ctx, d, recs[5:], 5) // the connection breaks before this one
	is.NoErr(err)
	is.Equal(len(out.Faults), 0)
	is.True(out.Retries <= 1) // none if the pool noticed the broken connection first

	is.Equal(pgtest.Rows(t, conn, `SELECT count(*) FROM sdktest`), []string{"10"})
}
