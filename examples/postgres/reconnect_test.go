package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/matryer/is"
)

func TestBackoff(t *testing.T) {
	is := is.New(t)
	var b backoff
	for _, ceiling := range []time.Duration{100, 200, 400, 800, 1600, 2000, 2000} {
		ceiling *= time.Millisecond
		d := b.next()
		is.True(d >= ceiling/2 && d <= ceiling) // each wait from the upper half of its range
	}
	start := time.Now()
	is.True(!b.sleep(t.Context(), start)) // a deadline passed: no wait
	is.True(b.sleep(t.Context(), start.Add(50*time.Millisecond)))
	is.True(time.Since(start) < time.Second) // cut short at the deadline
}

func TestConnectionLost(t *testing.T) {
	for _, c := range []struct {
		err  error
		lost bool
	}{
		{io.ErrUnexpectedEOF, true},
		{fmt.Errorf("receive message failed: %w", io.ErrUnexpectedEOF), true},
		{errors.New("receive changes: receive message failed: unexpected EOF"), true},
		{&pgconn.PgError{Code: "57P01"}, true},
		{&pgconn.PgError{Code: "57P02"}, true},
		{&pgconn.PgError{Code: "57P03"}, true},
		{&pgconn.PgError{Code: "08006"}, true},
		{errors.New(`failed to connect to host=127.0.0.1: dial error: connection refused`), true},
		{sdk.Retryable(errors.New(`record at position "1": table t: the database system is starting up [SQLSTATE 57P03]`)), true},
		{&pgconn.PgError{Code: "57P04"}, false}, // the database was dropped
		{&pgconn.PgError{Code: "40P01"}, false}, // a deadlock: the SDK's to retry
		{&pgconn.PgError{Code: "53300"}, false}, // too many connections: push-back
		{errors.New(`duplicate key [SQLSTATE 23505]`), false},
		{context.Canceled, false},
	} {
		if got := connectionLost(c.err); got != c.lost {
			t.Errorf("connectionLost(%v) = %v, want %v", c.err, got, c.lost)
		}
	}
}

// crashable starts a server of the test's own, which it may crash, that
// keeps every commit across a crash.
func crashable(t *testing.T) *pgtest.Server {
	t.Helper()
	s, err := pgtest.StartWith("synchronous_commit=on")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// crashes crashes s n times, each down from half a second to 1.5 s, with
// up to a second and a half of work in between; it returns the first
// failure, if any.
func crashes(s *pgtest.Server, n int) error {
	for range n {
		time.Sleep(time.Duration(500+rand.N(1000)) * time.Millisecond)
		if err := s.Crash(time.Duration(500+rand.N(1000)) * time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// inserting inserts rows into items, ten per transaction every 10 ms
// (1,000 rows a second), across crashes of the server, until stop is
// closed; the rows it has committed are the table's rows.
func inserting(t *testing.T, url string, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var conn *pgx.Conn
		defer func() {
			if conn != nil {
				conn.Close(context.Background())
			}
		}()
		next := 1
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if conn == nil || conn.IsClosed() {
				var err error
				if conn, err = pgx.Connect(context.Background(), url); err != nil {
					continue
				}
			}
			// A row whose commit the crash leaves in doubt is inserted again
			// under another id: the table says what was committed.
			if _, err := conn.Exec(context.Background(), `INSERT INTO items SELECT i FROM generate_series($1::int, $1::int + 9) i`, next); err == nil {
				next += 10
			} else {
				next += 10
				conn.Close(context.Background())
				conn = nil
			}
		}
	}()
	return &wg
}

// TestSourceReconnects crashes the server three times while the source
// streams about 1,000 rows a second, with Conduit's acks a quarter of a
// second behind: the source reconnects by itself, no error reaches Read,
// every row committed comes once (none lost, none twice, in commit order),
// and acks go on reaching the slot, as does the lag measurement.
func TestSourceReconnects(t *testing.T) {
	is := is.New(t)
	srv := crashable(t)
	url, conn := srv.Database(t, `CREATE TABLE items (id int PRIMARY KEY)`)
	conn.Close(t.Context())

	ctx, address := measured(t, t.Context(), "source")
	raw := map[string]string{"url": url, "tables": "items", "snapshot.mode": "never"}
	src, err := Connector.Source.New(raw)
	is.NoErr(err)
	t.Cleanup(func() { src.Teardown(context.Background()) })
	is.NoErr(src.Open(ctx, nil))
	s := src.(*Source)

	stop := make(chan struct{})
	ins := inserting(t, url, stop)
	crashed := make(chan error, 1)
	go func() { crashed <- crashes(srv, 3) }()

	seen := map[int]int{}
	var last sdk.Position
	var lastLSN pglogrepl.LSN
	type held struct {
		at  time.Time
		pos sdk.Position
	}
	var unacked []held
	read := func(d time.Duration) {
		rctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		for {
			recs, err := s.ReadBatch(rctx, 1000)
			if err != nil && rctx.Err() != nil {
				return
			}
			if err != nil {
				t.Fatalf("after %d records: %v", len(seen), err)
			}
			for _, r := range recs {
				id := int(r.Payload.After.(sdk.StructuredData)["id"].(int64))
				seen[id]++
				lsn, err := positionLSN(r.Position)
				is.NoErr(err)
				if lsn < lastLSN {
					t.Fatalf("record at %s after one at %s", r.Position, last)
				}
				last, lastLSN = r.Position, lsn
				unacked = append(unacked, held{time.Now(), r.Position})
			}
			for len(unacked) > 0 && time.Since(unacked[0].at) > 250*time.Millisecond {
				is.NoErr(s.Ack(t.Context(), unacked[0].pos))
				unacked = unacked[1:]
			}
		}
	}
	for {
		read(100 * time.Millisecond)
		select {
		case err := <-crashed:
			is.NoErr(err)
		default:
			continue
		}
		break
	}
	read(2 * time.Second) // rows inserted after the last crash
	close(stop)
	ins.Wait()

	check, err := pgx.Connect(t.Context(), url)
	is.NoErr(err)
	defer check.Close(context.Background())
	var want int
	is.NoErr(check.QueryRow(t.Context(), `SELECT count(*) FROM items`).Scan(&want))
	deadline := time.Now().Add(time.Minute)
	for len(seen) < want && time.Now().Before(deadline) {
		read(200 * time.Millisecond)
	}
	read(200 * time.Millisecond)
	for _, u := range unacked {
		is.NoErr(s.Ack(t.Context(), u.pos))
	}
	var missing, twice int
	rows, err := check.Query(t.Context(), `SELECT id FROM items`)
	is.NoErr(err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	is.NoErr(err)
	for _, id := range ids {
		if seen[int(id)] == 0 {
			missing++
		}
	}
	for _, n := range seen {
		if n > 1 {
			twice++
		}
	}
	t.Logf("%d rows committed, %d records read, %d missing, %d twice", want, len(seen), missing, twice)
	is.Equal(missing, 0)
	is.Equal(twice, 0)
	is.Equal(len(seen), want) // nothing that was not committed
	// Acks reach the slot on the new connection, and the lag goroutine
	// measures on one of its own.
	waitConfirmed(t, check, lastLSN.String())
	eventually(t, address, "the last change's LSN", func(v float64) bool { return v >= float64(lastLSN) }, "connkit_postgres_slot_confirmed_lsn")
}

// TestDestinationReconnects crashes the server three times while Writes of
// 50 records go one after another into a keyless table, exactly once: no
// Write returns an error, and every record is there once.
func TestDestinationReconnects(t *testing.T) {
	is := is.New(t)
	t.Setenv(pconnector.EnvConduitConnectorID, "pipeline:destination")
	srv := crashable(t)
	url, conn := srv.Database(t, `CREATE TABLE items (id int, pos text)`)
	conn.Close(t.Context())
	d, err := Connector.Destination.New(map[string]string{"url": url, "table": "items", "exactlyOnce.enabled": "true"})
	is.NoErr(err)
	is.NoErr(d.Open(t.Context()))
	defer d.Teardown(context.Background())

	crashed := make(chan error, 1)
	go func() { crashed <- crashes(srv, 3) }()
	written := 0
	for done := false; !done; {
		select {
		case err := <-crashed:
			is.NoErr(err)
			done = true
		default:
		}
		var recs []sdk.Record
		for i := range 50 {
			id := written + i
			recs = append(recs, sdk.Record{Position: sdk.Position(fmt.Sprint(id)), Operation: sdk.OperationCreate, Payload: sdk.Change{After: sdk.StructuredData{"id": id}}})
		}
		n, err := d.Write(t.Context(), recs)
		if err != nil {
			t.Fatalf("after %d records: %v", written+n, err)
		}
		is.Equal(n, len(recs))
		written += n
		time.Sleep(10 * time.Millisecond)
	}
	check, err := pgx.Connect(t.Context(), url)
	is.NoErr(err)
	defer check.Close(context.Background())
	var rows, distinct int
	is.NoErr(check.QueryRow(t.Context(), `SELECT count(*), count(DISTINCT id) FROM items`).Scan(&rows, &distinct))
	t.Logf("%d records written, %d rows, %d distinct", written, rows, distinct)
	is.Equal(distinct, written)
	is.Equal(rows, written)
}

// TestOpenWaitsForTheServer opens each role while the server is down,
// then starting: Open waits and succeeds.
func TestOpenWaitsForTheServer(t *testing.T) {
	is := is.New(t)
	srv := crashable(t)
	url, conn := srv.Database(t, `CREATE TABLE items (id int PRIMARY KEY)`)
	conn.Close(t.Context())
	for _, role := range []string{"destination", "source"} {
		crashed := make(chan error, 1)
		go func() { crashed <- srv.Crash(2 * time.Second) }()
		time.Sleep(300 * time.Millisecond) // the server is down
		var err error
		switch role {
		case "destination":
			var d sdk.Destination
			d, err = Connector.Destination.New(map[string]string{"url": url, "table": "items"})
			is.NoErr(err)
			err = d.Open(t.Context())
			d.Teardown(context.Background())
		case "source":
			var s sdk.Source
			s, err = Connector.Source.New(map[string]string{"url": url, "tables": "items", "snapshot.mode": "never"})
			is.NoErr(err)
			err = s.Open(t.Context(), nil)
			s.Teardown(context.Background())
		}
		if err != nil {
			t.Errorf("%s: %v", role, err)
		}
		is.NoErr(<-crashed)
	}
}

// TestReconnectTimeout: a database that stays away fails each role once
// reconnect.timeout has passed, with an error naming the parameter and
// the last reason; with 0, at once.
func TestReconnectTimeout(t *testing.T) {
	is := is.New(t)
	const refused = "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable"
	for _, c := range []struct {
		timeout  string
		least    time.Duration
		gaveUp   bool
		settings map[string]string
	}{
		{"500ms", 500 * time.Millisecond, true, nil},
		{"0", 0, false, nil},
	} {
		for _, role := range []string{"destination", "source"} {
			settings := map[string]string{"url": refused, "reconnect.timeout": c.timeout}
			maps.Copy(settings, c.settings)
			began := time.Now()
			var err error
			switch role {
			case "destination":
				d, nerr := Connector.Destination.New(settings)
				is.NoErr(nerr)
				err = d.Open(t.Context())
			case "source":
				settings["tables"] = "items"
				s, nerr := Connector.Source.New(settings)
				is.NoErr(nerr)
				err = s.Open(t.Context(), nil)
			}
			took := time.Since(began)
			is.True(err != nil)
			t.Logf("%s, reconnect.timeout %s: %v after %s", role, c.timeout, err, took)
			is.True(took >= c.least)
			is.Equal(strings.Contains(err.Error(), `(parameter "reconnect.timeout")`), c.gaveUp)
			is.True(strings.Contains(err.Error(), "connection refused"))
		}
	}

	// A Write that meets a lost connection waits for it up to the
	// timeout, then fails for good: not retryable.
	srv := crashable(t)
	url, conn := srv.Database(t, `CREATE TABLE items (id int PRIMARY KEY)`)
	conn.Close(t.Context())
	d, err := Connector.Destination.New(map[string]string{"url": url, "table": "items", "reconnect.timeout": "1s"})
	is.NoErr(err)
	is.NoErr(d.Open(t.Context()))
	defer d.Teardown(context.Background())
	rec := func(id int) []sdk.Record {
		return []sdk.Record{{Position: sdk.Position(fmt.Sprint(id)), Operation: sdk.OperationCreate, Key: sdk.StructuredData{"id": id}, Payload: sdk.Change{After: sdk.StructuredData{"id": id}}}}
	}
	_, err = d.Write(t.Context(), rec(1))
	is.NoErr(err)
	crashed := make(chan error, 1)
	go func() { crashed <- srv.Crash(4 * time.Second) }()
	time.Sleep(500 * time.Millisecond)
	began := time.Now()
	n, err := d.Write(t.Context(), rec(2))
	took := time.Since(began)
	t.Logf("Write: %v after %s", err, took)
	is.Equal(n, 0)
	is.True(err != nil)
	is.True(!sdk.IsRetryable(err))
	is.True(strings.Contains(err.Error(), `(parameter "reconnect.timeout")`))
	is.True(took < 3*time.Second)
	is.NoErr(<-crashed)
}

// A source streaming changes whose database stays away longer than
// reconnect.timeout fails Read with an error naming the parameter.
func TestSourceReconnectTimeout(t *testing.T) {
	is := is.New(t)
	srv := crashable(t)
	url, conn := srv.Database(t, `CREATE TABLE items (id int PRIMARY KEY)`)
	raw, err := Connector.Source.New(map[string]string{"url": url, "tables": "items", "snapshot.mode": "never", "reconnect.timeout": "1s"})
	is.NoErr(err)
	defer raw.Teardown(context.Background())
	is.NoErr(raw.Open(t.Context(), nil))
	src := raw.(*Source)
	exec(t, conn, `INSERT INTO items VALUES (1)`)
	conn.Close(t.Context())
	recs := readN(t, src, 1)
	is.NoErr(src.Ack(t.Context(), recs[0].Position))
	crashed := make(chan error, 1)
	go func() { crashed <- srv.Crash(4 * time.Second) }()
	ctx, cancel := context.WithTimeout(t.Context(), 3500*time.Millisecond)
	defer cancel()
	_, err = src.ReadBatch(ctx, 10)
	t.Logf("Read: %v", err)
	is.True(err != nil && strings.Contains(err.Error(), `(parameter "reconnect.timeout")`))
	is.NoErr(<-crashed)
}

// A statement whose connection the server ends mid-batch (as at a
// shutdown) is written again by the same Write: with reconnect.timeout
// set, the Write returns every record written once, plain inserts
// included.
func TestTerminatedMidBatchWrittenAgain(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, `
		CREATE TABLE second (id int);
		CREATE SEQUENCE kills;
		CREATE FUNCTION kill_once() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF nextval('kills') = 1 THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF;
			RETURN NULL;
		END $$;
		CREATE TRIGGER kill_once BEFORE INSERT ON second FOR EACH STATEMENT EXECUTE FUNCTION kill_once()`, map[string]string{"table": "second"})
	var records []sdk.Record
	for i := range 100 {
		records = append(records, rec(fmt.Sprint(i), sdk.OperationCreate, nil, sdk.StructuredData{"id": i}))
	}
	n, err := d.Write(t.Context(), records)
	is.NoErr(err)
	is.Equal(n, 100)
	is.Equal(rows(t, conn, `SELECT count(*), count(DISTINCT id) FROM second`), []string{"100|100"})
}
