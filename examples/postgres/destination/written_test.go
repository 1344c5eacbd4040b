package destination

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/pgtest"
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
	return opened(t, d.cfg)
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
	is.Equal(pgtest.Rows(t, conn, `SELECT n FROM items ORDER BY n`), []string{"1", "2", "3", "4", "5", "6", "7", "8"})

	// Another connector's positions are its own.
	t.Setenv(pconnector.EnvConduitConnectorID, "pipeline:other")
	d3 := reopen(t, d)
	n, err = d3.Write(t.Context(), inserts(8, 8))
	is.NoErr(err)
	is.Equal(n, 1)
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*) FROM items WHERE n = 8`), []string{"2"})
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
	kept := pgtest.Rows(t, conn, `SELECT array_length(positions, 1) FROM connkit_positions ORDER BY seq`)
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
	is.Equal(pgtest.Rows(t, conn, `SELECT n FROM items ORDER BY n`), []string{"1", "2", "4", "5"})
}

func TestExactlyOnceNeedsTheConnectorID(t *testing.T) {
	is := is.New(t)
	t.Setenv(pconnector.EnvConduitConnectorID, "")
	url, _ := server.Database(t, `CREATE TABLE items (n int)`)
	d, err := sdk.NewDestination(New).New(map[string]string{"url": url, "exactlyOnce.enabled": "true"})
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
	done := writeAsync(ctx, d, inserts(1, 5))
	var writer int // the server process running the statement, once it waits
	for writer == 0 {
		writer = advisoryWaiter(t, conn)
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
	is.Equal(pgtest.Rows(t, conn, `SELECT n FROM items ORDER BY n`), []string{"1", "2", "3", "4", "5", "6", "7"})
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

// itemsOf are keyless creates for table items at positions <prefix><first>
// to <prefix><last>, each with its number.
func itemsOf(prefix string, first, last int) []sdk.Record {
	var out []sdk.Record
	for i := first; i <= last; i++ {
		r := rec(fmt.Sprintf("%s%d", prefix, i), sdk.OperationCreate, nil, sdk.StructuredData{"n": i})
		r.Metadata.SetCollection("items")
		out = append(out, r)
	}
	return out
}

// writeAll writes each goroutine's batches, in order, with goroutines
// writing together, and returns the first failure.
func writeAll(ctx context.Context, d *Destination, batches [][][]sdk.Record) error {
	return errors.Join(concurrently(len(batches), func(g int) error {
		for _, b := range batches[g] {
			n, err := d.Write(ctx, b)
			if err != nil || n != len(b) {
				return fmt.Errorf("writer %d: wrote %d of %d: %v", g, n, len(b), err)
			}
		}
		return nil
	})...)
}

// positionsKept returns how many positions the positions table holds,
// how many distinct, and whether the transactions it holds are numbered
// without a gap.
func positionsKept(t *testing.T, conn *pgx.Conn) (n, distinct int, gapless bool) {
	t.Helper()
	err := conn.QueryRow(t.Context(), `SELECT count(p), count(DISTINCT p),
			(SELECT count(*) = max(seq) - min(seq) + 1 FROM connkit_positions)
		FROM connkit_positions, unnest(positions) AS p`).Scan(&n, &distinct, &gapless)
	if err != nil {
		t.Fatal(err)
	}
	return n, distinct, gapless
}

// TestExactlyOnceConcurrentWrites: Writes in flight together each commit
// their positions with their rows, once; the same batches written again,
// together, by the destination or by one opened after it (as after a
// crash), are acknowledged whole and write nothing twice.
func TestExactlyOnceConcurrentWrites(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	t.Setenv(pconnector.EnvConduitConnectorID, "pipeline:destination")
	conn, d := setup(t, `CREATE TABLE items (n int)`, map[string]string{"exactlyOnce.enabled": "true"})
	const writers = 8
	batches := make([][][]sdk.Record, writers)
	total := 0
	for g := range batches {
		next := 1
		for _, size := range []int{1, 5, copyMin + 20, 3, 1, 40} { // statements and COPY
			batches[g] = append(batches[g], itemsOf(fmt.Sprintf("g%d-", g), next, next+size-1))
			next += size
			total += size
		}
	}
	is.NoErr(writeAll(ctx, d, batches))
	want := []string{fmt.Sprintf("%d", total)}
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*) FROM items`), want)
	n, distinct, gapless := positionsKept(t, conn)
	is.Equal(n, total) // every position once: the window holds them all
	is.Equal(distinct, total)
	is.True(gapless)

	is.NoErr(writeAll(ctx, d, batches))
	is.NoErr(writeAll(ctx, reopen(t, d), batches))
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*) FROM items`), want)
	n, _, _ = positionsKept(t, conn)
	is.Equal(n, total)
}

// TestExactlyOnceConcurrentPruning: while a Write's transaction is open,
// the deletion of old positions that others carry never reaches it, and
// every deletion keeps at least the window.
func TestExactlyOnceConcurrentPruning(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	t.Setenv(pconnector.EnvConduitConnectorID, "pipeline:destination")
	const window = 20
	url, conn := server.Database(t, `CREATE TABLE items (n int);`+gateTable)
	d, err := New(Config{URL: url})
	is.NoErr(err)
	d.cfg.Auto.Create, d.cfg.Auto.Evolve = true, true
	d.cfg.ExactlyOnce.Enabled, d.cfg.ExactlyOnce.Table, d.cfg.ExactlyOnce.Window = true, "connkit_positions", window
	is.NoErr(d.Open(ctx))
	t.Cleanup(func() { d.Teardown(context.Background()) })

	is.NoErr(writeAll(ctx, d, [][][]sdk.Record{{itemsOf("before-", 1, 30)}})) // older transactions, to delete
	g := closeGate(t, url, conn)
	held := make(chan error, 1)
	go func() {
		_, err := d.Write(ctx, []sdk.Record{gateRecord("held", 1)})
		held <- err
	}()
	g.waitFor(t, 1)
	const writers = 4
	batches := make([][][]sdk.Record, writers)
	for w := range batches {
		for b := range 10 {
			batches[w] = append(batches[w], itemsOf(fmt.Sprintf("w%d-%d-", w, b), 1, 3))
		}
	}
	is.NoErr(writeAll(ctx, d, batches)) // 40 transactions of 3 positions, above the held one
	g.open(t)
	is.NoErr(<-held)
	var kept bool // the held transaction's positions, committed last: nothing since could delete them
	is.NoErr(conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM connkit_positions WHERE 'held'::bytea = ANY (positions))`).Scan(&kept))
	is.True(kept)

	is.NoErr(writeAll(ctx, d, [][][]sdk.Record{{itemsOf("after-", 1, 2)}})) // carries the deletion
	n, distinct, gapless := positionsKept(t, conn)
	is.True(n >= window)
	is.Equal(distinct, n)
	is.True(gapless) // the newest transactions, none missing among them
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*) FROM items`), []string{fmt.Sprint(30 + writers*10*3 + 2)})
	d2 := reopen(t, d)
	is.True(d2.written.count >= window)
	for _, p := range []string{"after-1", "after-2"} { // the newest
		is.True(d2.written.has(sdk.Position(p)))
	}
	is.True(!d2.written.has(sdk.Position("before-1")))
}

// TestExactlyOnceConcurrentFault: a Write that fails in the middle (a
// record breaks a check) commits the records before it and fails at its
// index, while the Writes beside it commit all of theirs; the rest of its
// batch, written next, is written once.
func TestExactlyOnceConcurrentFault(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	t.Setenv(pconnector.EnvConduitConnectorID, "pipeline:destination")
	conn, d := setup(t, `CREATE TABLE items (n int CHECK (n <> 4))`, map[string]string{"exactlyOnce.enabled": "true"})
	const writers = 6
	errs := concurrently(writers, func(g int) error {
		for b := range 5 {
			batch := itemsOf(fmt.Sprintf("g%d-%d-", g, b), 1, 8)
			n, err := d.Write(ctx, batch)
			if b != 2 {
				batch = append(batch[:3], batch[4:]...) // n = 4 is never written
				n, err = d.Write(ctx, batch)
				if err != nil || n != len(batch) {
					return fmt.Errorf("writer %d, batch %d: wrote %d of %d: %v", g, b, n, len(batch), err)
				}
				continue
			}
			if n != 3 || !sdk.IsRecordFault(err) || !strings.Contains(err.Error(), fmt.Sprintf(`record at position "g%d-%d-4"`, g, b)) {
				return fmt.Errorf("writer %d, batch %d: wrote %d: %v, want 3 and the fault of the fourth", g, b, n, err)
			}
			n, err = d.Write(ctx, batch[n+1:]) // as the SDK goes on after a record's fault
			if err != nil || n != 4 {
				return fmt.Errorf("writer %d, batch %d: the rest: wrote %d of 4: %v", g, b, n, err)
			}
		}
		return nil
	})
	is.NoErr(errors.Join(errs...))
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*), count(*) FILTER (WHERE n = 4) FROM items`), []string{fmt.Sprintf("%d|0", writers*5*7)})
	// Only writer batches whose fourth record failed had their first three
	// written by the failing Write; each position is kept once.
	n, distinct, _ := positionsKept(t, conn)
	is.Equal(n, writers*5*7)
	is.Equal(distinct, n)
	var four int
	is.NoErr(conn.QueryRow(ctx, `SELECT count(*) FROM connkit_positions, unnest(positions) AS p WHERE convert_from(p, 'UTF8') LIKE '%-4'`).Scan(&four))
	is.Equal(four, 0)
}

// TestExactlyOnceRetryWhileLostCommitRuns: a Write whose connection broke
// while the server was committing its transaction (a deferred trigger
// holds the commit, and ignores the cancel request pgx sends, as when the
// network is down) is retried at once, before that commit ends. The
// retry fences the lost transaction's number, which waits for the commit
// to end, and then finds its positions: the records are acknowledged,
// not written again once the lost commit goes through.
//
// Now and then, on a loaded machine, the server aborts the lost commit
// before the retry starts, and the retry writes the records itself; the
// scenario is then run again, on a database of its own.
func TestExactlyOnceRetryWhileLostCommitRuns(t *testing.T) {
	for attempt := 1; !retryWhileLostCommitRuns(t); attempt++ {
		if attempt == 3 {
			t.Fatal("the server aborted the lost commit before the retry in 3 attempts out of 3")
		}
		t.Logf("attempt %d: the server aborted the lost commit before the retry; once more", attempt)
	}
}

// retryWhileLostCommitRuns runs the scenario of
// TestExactlyOnceRetryWhileLostCommitRuns, and reports false if the
// server aborted the lost commit before the retry, after checking that
// the retry wrote each record once.
func retryWhileLostCommitRuns(t *testing.T) bool {
	is := is.New(t)
	ctx := t.Context()
	d, proxy, tx, conn := lostCommitSetup(t, waitOnceTrigger, 100)
	lost := writeAsync(ctx, d, inserts(1, 5))
	waitForLock(t, conn, "advisory", lost) // the commit waits
	lostPID := advisoryWaiter(t, conn)
	proxy.Drop()
	r := <-lost
	is.True(sdk.IsRetryable(r.err))

	retry := writeAsync(ctx, d, inserts(1, 5))
	if r, waited := lockWaited(t, conn, "transactionid", retry); !waited {
		// The retry found nothing to wait for: the lost commit must be
		// gone, and the retry must have written the records.
		var running bool
		is.NoErr(conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1)`, lostPID).Scan(&running))
		if running {
			t.Fatalf("the retry ended (%d, %v) without waiting for the lost commit, which still runs", r.n, r.err)
		}
		is.NoErr(r.err)
		is.Equal(r.n, 5)
		is.NoErr(tx.Commit(ctx))
		is.Equal(pgtest.Rows(t, conn, `SELECT n FROM items ORDER BY n`), []string{"1", "2", "3", "4", "5"})
		return false
	}
	is.NoErr(tx.Commit(ctx)) // the lost commit goes through
	r = <-retry
	is.NoErr(r.err)
	is.Equal(r.n, 5)
	for ended := false; !ended; {
		is.NoErr(conn.QueryRow(ctx, `SELECT NOT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory'
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))`).Scan(&ended))
	}
	is.Equal(pgtest.Rows(t, conn, `SELECT n FROM items ORDER BY n`), []string{"1", "2", "3", "4", "5"})
	n, err := reopen(t, d).Write(ctx, inserts(1, 6))
	is.NoErr(err)
	is.Equal(n, 6)
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*) FROM items`), []string{"6"})
	return true
}

// waitOnceTrigger makes the first commit into items wait for advisory
// lock 42, through the cancel pgx sends as it drops the connection.
const waitOnceTrigger = `CREATE SEQUENCE once;
	CREATE FUNCTION wait_once() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF nextval('once') = 1 THEN
			LOOP
				BEGIN PERFORM pg_advisory_xact_lock(42); EXIT;
				EXCEPTION WHEN query_canceled THEN NULL; -- the cancel pgx sends as it drops the connection
				END;
			END LOOP;
		END IF;
		RETURN NULL;
	END $$;
	CREATE CONSTRAINT TRIGGER wait_once AFTER INSERT ON items DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION wait_once()`

// writeResult is what a Write returned.
type writeResult struct {
	n   int
	err error
}

// writeAsync writes records with d on a goroutine of its own; the channel
// gets what the Write returns.
func writeAsync(ctx context.Context, d *Destination, records []sdk.Record) <-chan writeResult {
	done := make(chan writeResult, 1)
	go func() {
		n, err := d.Write(ctx, records)
		done <- writeResult{n, err}
	}()
	return done
}

// waitForLock returns once the database shows a lock of kind waited for,
// failing if the Write whose result done gets ends first.
func waitForLock(t *testing.T, conn *pgx.Conn, kind string, done <-chan writeResult) {
	t.Helper()
	if r, waited := lockWaited(t, conn, kind, done); !waited {
		t.Fatalf("the Write ended (%d, %v) before a %s lock was waited for; sessions: %q", r.n, r.err, kind,
			pgtest.Rows(t, conn, `SELECT pid, state, wait_event_type, left(query, 60) FROM pg_stat_activity WHERE datname = current_database()`))
	}
}

// advisoryWaiter returns the server process of this database that waits
// for an advisory lock, 0 if none does.
func advisoryWaiter(t *testing.T, conn *pgx.Conn) int {
	t.Helper()
	var pid int
	err := conn.QueryRow(t.Context(), `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&pid)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	return pid
}

// lockWaited returns once the database shows a lock of kind waited for,
// reporting true, or once the Write whose result done gets ends first,
// with its result.
func lockWaited(t *testing.T, conn *pgx.Conn, kind string, done <-chan writeResult) (writeResult, bool) {
	t.Helper()
	for {
		select {
		case r := <-done:
			return r, false
		default:
		}
		var waiting bool
		err := conn.QueryRow(t.Context(), `SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = $1 AND NOT granted
			AND pid IN (SELECT pid FROM pg_stat_activity WHERE datname = current_database()))`, kind).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			return writeResult{}, true
		}
	}
}
