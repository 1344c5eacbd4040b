package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/sdktest"
	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// inserts are keyless creates at positions p<first> to p<last>, each with
// its number.
func inserts(first, last int) []sdk.Record {
	var out []sdk.Record
	for i := first; i <= last; i++ {
		out = append(out, rec(fmt.Sprintf("p%d", i), sdk.OperationCreate, nil, sdk.StructuredData{"n": i}))
	}
	return out
}

// reopen is a second destination on d's database with d's settings, as a
// restarted plugin opens it.
func reopen(t *testing.T, d *Destination) *Destination {
	t.Helper()
	d2, err := New(d.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d2.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d2.Teardown(context.Background()) })
	return d2
}

func TestExactlyOnceSkipsWrittenRecords(t *testing.T) {
	is := is.New(t)
	t.Setenv(pconnector.EnvConduitConnectorID, "pipeline:destination")
	conn, d := setup(t, `CREATE TABLE items (n int)`, map[string]string{"table": "items", "exactlyOnce.enabled": "true"})
	n, err := d.Write(t.Context(), inserts(1, 5))
	is.NoErr(err)
	is.Equal(n, 5)

	// A restart replays from before the last written record, mixed with
	// new ones: only the new are written, and all are counted.
	d2 := reopen(t, d)
	replay := append(inserts(3, 8), inserts(2, 2)...)
	n, err = d2.Write(t.Context(), replay)
	is.NoErr(err)
	is.Equal(n, len(replay))
	is.Equal(rows(t, conn, `SELECT n FROM items ORDER BY n`), []string{"1", "2", "3", "4", "5", "6", "7", "8"})

	// Another connector's positions are its own.
	t.Setenv(pconnector.EnvConduitConnectorID, "pipeline:other")
	d3 := reopen(t, d)
	n, err = d3.Write(t.Context(), inserts(8, 8))
	is.NoErr(err)
	is.Equal(n, 1)
	is.Equal(rows(t, conn, `SELECT count(*) FROM items WHERE n = 8`), []string{"2"})
}

func TestExactlyOnceKeepsAWindow(t *testing.T) {
	is := is.New(t)
	t.Setenv(pconnector.EnvConduitConnectorID, "pipeline:destination")
	conn, d := setup(t, `CREATE TABLE items (n int)`, map[string]string{"table": "items", "exactlyOnce.enabled": "true", "exactlyOnce.window": "4"})
	for i := 1; i <= 20; i += 2 {
		n, err := d.Write(t.Context(), inserts(i, i+1))
		is.NoErr(err)
		is.Equal(n, 2)
	}
	// The newest four positions and at most one transaction more: the one
	// whose deletion goes with the next write.
	kept := rows(t, conn, `SELECT array_length(positions, 1) FROM connkit_positions ORDER BY seq`)
	is.True(len(kept) <= 3)
	d2 := reopen(t, d)
	for i := 17; i <= 20; i++ {
		is.True(d2.written.has(sdk.Position(fmt.Sprintf("p%d", i)))) // within the window
	}
	is.True(!d2.written.has(sdk.Position("p1"))) // forgotten: a replay this old is written again
}

func TestExactlyOnceRollsBackPositionsWithRows(t *testing.T) {
	is := is.New(t)
	t.Setenv(pconnector.EnvConduitConnectorID, "pipeline:destination")
	conn, d := setup(t, `CREATE TABLE items (n int CHECK (n <> 3))`, map[string]string{"table": "items", "exactlyOnce.enabled": "true"})
	n, err := d.Write(t.Context(), inserts(1, 5))
	is.True(err != nil) // the record at p3 breaks the check
	is.True(sdk.IsRecordFault(err))
	is.Equal(n, 2)
	d2 := reopen(t, d)
	is.True(!d2.written.has(sdk.Position("p3")))
	n, err = d2.Write(t.Context(), inserts(4, 5))
	is.NoErr(err)
	is.Equal(n, 2)
	is.Equal(rows(t, conn, `SELECT n FROM items ORDER BY n`), []string{"1", "2", "4", "5"})
}

func TestExactlyOnceNeedsTheConnectorID(t *testing.T) {
	is := is.New(t)
	t.Setenv(pconnector.EnvConduitConnectorID, "")
	url, _ := server.Database(t, `CREATE TABLE items (n int)`)
	d, err := Connector.Destination.New(map[string]string{"url": url, "exactlyOnce.enabled": "true"})
	is.NoErr(err)
	err = d.Open(t.Context())
	is.True(err != nil && strings.Contains(err.Error(), `parameter "exactlyOnce.enabled"`) && strings.Contains(err.Error(), "CONDUIT_CONNECTOR_ID"))
}

// A statement whose connection breaks while the server runs it is
// retryable, plain inserts included, and the next Write reads the positions
// again: if the statement committed after all (the server had the whole
// batch), its records are not written twice; if it did not, they are
// written now. Which one happens depends on how much of the batch the
// proxy had passed on when it dropped the connection; both must end with
// every record once.
func TestExactlyOnceLostCommit(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	// The test holds the lock the insert's trigger waits for, breaks the
	// connection while it waits, then lets it commit.
	d, proxy, tx, conn := lostCommitSetup(t, `CREATE TRIGGER wait_for_test AFTER INSERT ON items FOR EACH STATEMENT EXECUTE FUNCTION wait_for_test()`, 100)
	type result struct {
		n   int
		err error
	}
	done := make(chan result)
	go func() {
		n, err := d.Write(ctx, inserts(1, 5))
		done <- result{n, err}
	}()
	var writer int // the server process running the statement, once it waits
	for writer == 0 {
		err := conn.QueryRow(ctx, `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&writer)
		if !errors.Is(err, pgx.ErrNoRows) {
			is.NoErr(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	proxy.Drop()
	is.NoErr(tx.Commit(ctx))
	r := <-done
	is.Equal(r.n, 0)
	is.True(sdk.IsRetryable(r.err)) // a plain insert, retryable in this mode alone
	// The statement has ended, committed or not, once its server process
	// has gone with the connection.
	for running := true; running; time.Sleep(10 * time.Millisecond) {
		is.NoErr(conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1)`, writer).Scan(&running))
	}
	var committed int
	is.NoErr(conn.QueryRow(ctx, `SELECT count(*) FROM items`).Scan(&committed))
	is.True(committed == 0 || committed == 5)
	t.Logf("the dropped statement committed %d rows", committed)

	n, err := d.Write(ctx, inserts(1, 7))
	is.NoErr(err)
	is.Equal(n, 7)
	is.Equal(rows(t, conn, `SELECT n FROM items ORDER BY n`), []string{"1", "2", "3", "4", "5", "6", "7"})
}

// lostCommitSetup opens a destination in the exactly-once mode (window
// positions) on a table items (n int) whose trigger, created by the
// statement given, calls wait_for_test, which waits for advisory lock 42.
// The destination connects through a proxy the test can drop, and the
// returned transaction holds the lock; conn is the database's own.
func lostCommitSetup(t *testing.T, trigger string, window int) (*Destination, *sdktest.Proxy, pgx.Tx, *pgx.Conn) {
	t.Helper()
	is := is.New(t)
	ctx := t.Context()
	t.Setenv(pconnector.EnvConduitConnectorID, "pipeline:destination")
	dbURL, conn := server.Database(t, `CREATE TABLE items (n int);
		CREATE FUNCTION wait_for_test() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_advisory_xact_lock(42); RETURN NULL; END $$;
		`+trigger)
	u, err := url.Parse(dbURL)
	is.NoErr(err)
	proxy, err := sdktest.NewProxy(u.Host)
	is.NoErr(err)
	t.Cleanup(func() { proxy.Close() })
	u.Host = proxy.Addr()
	d, err := New(Config{URL: u.String(), Table: "items"})
	is.NoErr(err)
	d.cfg.ExactlyOnce.Enabled, d.cfg.ExactlyOnce.Table, d.cfg.ExactlyOnce.Window = true, "connkit_positions", window
	is.NoErr(d.Open(ctx))
	t.Cleanup(func() { d.Teardown(context.Background()) })
	lock, err := pgx.Connect(ctx, dbURL)
	is.NoErr(err)
	t.Cleanup(func() { lock.Close(context.Background()) })
	tx, err := lock.Begin(ctx)
	is.NoErr(err)
	_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock(42)`)
	is.NoErr(err)
	return d, proxy, tx, conn
}
