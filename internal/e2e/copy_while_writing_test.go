//go:build linux

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// copyTables are the kinds of table TestConduitPostgresCopyWhileWriting
// copies, each with the copy it is written to: one with a key into one
// with a key, a keyless one (REPLICA IDENTITY FULL) into one without a
// key, and a partitioned table, read by its parent. A copy's arrived
// column says when its row was written.
var copyTables = []struct {
	name, ddl, copy string
}{
	{"key", `CREATE TABLE items (id int PRIMARY KEY, n bigint, pad text)`,
		`CREATE TABLE items (id int PRIMARY KEY, n bigint, pad text, arrived timestamptz DEFAULT clock_timestamp())`},
	{"keyless", `CREATE TABLE items (id int, n bigint, pad text); ALTER TABLE items REPLICA IDENTITY FULL`,
		`CREATE TABLE items (id int, n bigint, pad text, arrived timestamptz DEFAULT clock_timestamp())`},
	{"partitioned", `CREATE TABLE items (id int PRIMARY KEY, n bigint, pad text) PARTITION BY HASH (id);
		CREATE TABLE items_0 PARTITION OF items FOR VALUES WITH (MODULUS 3, REMAINDER 0);
		CREATE TABLE items_1 PARTITION OF items FOR VALUES WITH (MODULUS 3, REMAINDER 1);
		CREATE TABLE items_2 PARTITION OF items FOR VALUES WITH (MODULUS 3, REMAINDER 2)`,
		`CREATE TABLE items (id int PRIMARY KEY, n bigint, pad text, arrived timestamptz DEFAULT clock_timestamp())`},
}

// copyRows is how many rows the tables of TestConduitPostgresCopyWhileWriting
// start with: CONNKIT_COPY_ROWS, or 100,000.
func copyRows(t *testing.T) int {
	if s := os.Getenv("CONNKIT_COPY_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1000 {
			t.Fatalf("CONNKIT_COPY_ROWS=%q: want a number of rows, at least 1000", s)
		}
		return n
	}
	return 100000
}

// markerBase is the first id of the writer's marker rows, whose n is when
// they were inserted, in Unix milliseconds.
const markerBase = 100_000_000

// TestConduitPostgresCopyWhileWriting copies each kind of table of
// copyRows rows with standalone:postgres into its copy, exactly once, in
// each engine, while a writer inserts, updates and deletes rows ahead of,
// in and behind the chunks, and inserts a marker row every 100 ms.
// Conduit is killed with SIGKILL at a third and at two thirds of the copy.
// The copy ends equal to the table, no row twice; no transaction of the
// source's is open longer than 5 s; and the changes come while the table
// is copied, not after: the first marker reaches the copy before most of
// the table's rows.
func TestConduitPostgresCopyWhileWriting(t *testing.T) {
	rows := copyRows(t)
	for _, kind := range copyTables {
		for _, engine := range engines {
			t.Run(kind.name+"/"+engine.name, func(t *testing.T) {
				copyWhileWriting(t, kind.ddl, kind.copy, rows, engine.flags)
			})
		}
	}
}

func copyWhileWriting(t *testing.T, ddl, copyDDL string, rows int, flags []string) {
	from, src := sourceDatabase(t, ddl+fmt.Sprintf(`;
		INSERT INTO items SELECT i, i, 'row ' || i FROM generate_series(1, %d) i;
		ANALYZE items`, rows))
	to, _ := pg.Database(t, copyDDL)
	pipeline := pipelineYAML("standalone:postgres", map[string]string{
		"url": from, "tables": "items", "slot.name": dbName(from),
	}, "standalone:postgres", map[string]string{"url": to, "exactlyOnce.enabled": "true"})
	xacts := watchTransactions(t, from)
	cr := startCrash(t, pipeline, to, flags)
	w := startItemsWriter(t, from, rows)
	cr.waitPersisted("e2e:source")
	initial := fmt.Sprintf(`SELECT count(*) FROM items WHERE id <= %d`, rows)
	var kills []time.Time
	cr.waitFor(initial, int64(rows/3))
	kills = append(kills, time.Now())
	cr.killConduit()
	cr.waitFor(initial, int64(rows*2/3))
	kills = append(kills, time.Now())
	cr.killConduit()
	cr.waitFor(initial, int64(rows*9/10))
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	waitForItemsCopy(t, cr, src, to)
	cr.c.stop()
	if cr.startedOver() {
		t.Error("the source started over: Conduit lost its position")
	}
	longest := xacts()
	t.Logf("the source's longest transaction: %.2f s", longest)
	if longest > 5 {
		t.Errorf("a transaction of the source's was open %.2f s", longest)
	}
	checkChangesInterleaved(t, to, rows, kills)
}

// itemsWriter changes items while the table is copied.
type itemsWriter struct {
	stopped chan struct{}
	ended   chan error
	marked  int // markers inserted
	once    sync.Once
	err     error
}

// startItemsWriter starts writing to items at url, whose rows 1 to rows
// the copy starts with: a transaction of one to three statements every 2
// ms, each updating or deleting a random one of those rows or inserting a
// new one, with a seeded random workload; and a marker row every 100 ms.
func startItemsWriter(t *testing.T, url string, rows int) *itemsWriter {
	seed := time.Now().UnixNano()
	t.Logf("writer's seed: %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	w := &itemsWriter{stopped: make(chan struct{}), ended: make(chan error, 1)}
	go func() {
		defer conn.Close(context.Background())
		w.ended <- w.write(conn, rng, rows)
	}()
	t.Cleanup(func() { _ = w.stop() })
	return w
}

func (w *itemsWriter) write(conn *pgx.Conn, rng *rand.Rand, rows int) error {
	ctx := context.Background()
	tick, mark := time.NewTicker(2*time.Millisecond), time.NewTicker(100*time.Millisecond)
	defer tick.Stop()
	defer mark.Stop()
	for inserted := 1; ; {
		select {
		case <-w.stopped:
			return nil
		case <-mark.C:
			w.marked++
			if _, err := conn.Exec(ctx, `INSERT INTO items VALUES ($1, (extract(epoch FROM clock_timestamp()) * 1000)::bigint, 'marker')`, markerBase+w.marked); err != nil {
				return err
			}
			continue
		case <-tick.C:
		}
		batch := &pgx.Batch{}
		for range 1 + rng.IntN(3) {
			switch k := 1 + rng.IntN(rows); rng.IntN(3) {
			case 0:
				batch.Queue(`UPDATE items SET n = n + 1, pad = pad || '+' WHERE id = $1`, k)
			case 1:
				batch.Queue(`DELETE FROM items WHERE id = $1`, k)
			default:
				batch.Queue(`INSERT INTO items VALUES ($1, 0, 'new')`, rows+inserted)
				inserted++
			}
		}
		if err := conn.SendBatch(ctx, batch).Close(); err != nil {
			return err
		}
	}
}

// stop stops the writer and returns its error.
func (w *itemsWriter) stop() error {
	w.once.Do(func() {
		close(w.stopped)
		w.err = <-w.ended
	})
	return w.err
}

// watchTransactions samples, every 100 ms until the test ends, how long
// the source's sessions (application connkit-postgres-source) on url's
// database have had a transaction open, and returns a function that
// returns the longest seen, in seconds.
func watchTransactions(t *testing.T, url string) func() float64 {
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var longest float64
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		defer conn.Close(context.Background())
		for {
			var s float64
			err := conn.QueryRow(context.Background(), `SELECT coalesce(max(extract(epoch FROM clock_timestamp() - xact_start)), 0)
				FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'connkit-postgres-source' AND backend_type = 'client backend'`).Scan(&s)
			if err == nil {
				mu.Lock()
				longest = max(longest, s)
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	var once sync.Once
	stop := func() { once.Do(func() { close(done); <-stopped }) }
	t.Cleanup(stop)
	return func() float64 {
		stop()
		mu.Lock()
		defer mu.Unlock()
		return longest
	}
}

// tableDigest is the number of rows of items and a digest of them all, as
// a multiset: equal digests, equal tables.
const tableDigest = `SELECT count(*) || ' ' || coalesce(md5(string_agg(id || ':' || n || ':' || pad, ',' ORDER BY id, n, pad)), '') FROM items`

// waitForItemsCopy waits until the copy at to equals items at src, for at
// most five minutes, and otherwise fails saying how they differ.
func waitForItemsCopy(t *testing.T, cr *crash, src *pgx.Conn, to string) {
	t.Helper()
	var want string
	if err := src.QueryRow(t.Context(), tableDigest).Scan(&want); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		got := queryString(t, to, tableDigest)
		if got == want {
			return
		}
		select {
		case <-cr.c.Done():
			t.Fatalf("Conduit exited (%v); the copy has %s, the table %s", cr.c.Err(), got, want)
		case <-time.After(time.Second):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the copy differs from the table after five minutes: %s", copyDifferences(t, src, to))
		}
	}
}

// queryString runs query, which returns one text, on url's database.
func queryString(t *testing.T, url, query string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var s string
	if err := conn.QueryRow(t.Context(), query).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// copyDifferences says how the copy at to differs from items at src: how
// many rows each has, and the first rows one has more often than the
// other.
func copyDifferences(t *testing.T, src *pgx.Conn, to string) string {
	rowsOf := func(conn *pgx.Conn) map[string]int {
		out := map[string]int{}
		for _, r := range collect(t.Context(), conn, `SELECT id || ':' || n || ':' || pad FROM items`, pgx.RowTo[string]) {
			out[r]++
		}
		return out
	}
	dst, err := pgx.Connect(t.Context(), to)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close(context.Background())
	want, got := rowsOf(src), rowsOf(dst)
	var diffs []string
	for r, n := range want {
		if got[r] != n && len(diffs) < 20 {
			diffs = append(diffs, fmt.Sprintf("%s: copy %d, table %d", r, got[r], n))
		}
	}
	for r, n := range got {
		if want[r] == 0 && len(diffs) < 20 {
			diffs = append(diffs, fmt.Sprintf("%s: copy %d, table 0", r, n))
		}
	}
	return fmt.Sprintf("%d and %d distinct rows; %v", len(got), len(want), diffs)
}

// checkChangesInterleaved checks that changes came while the table was
// copied: the first marker row reached the copy before 90% of the table's
// first rows had. It logs how long the markers took to arrive, but for
// those inserted from 3 s before a kill of Conduit to 20 s after.
func checkChangesInterleaved(t *testing.T, to string, rows int, kills []time.Time) {
	t.Helper()
	before := count(t, to, fmt.Sprintf(`SELECT count(*) FROM items WHERE id <= %d AND arrived < (SELECT arrived FROM items WHERE id = %d)`, rows, markerBase+1))
	running := "true"
	for _, k := range kills {
		running += fmt.Sprintf(" AND n NOT BETWEEN %d AND %d", k.Add(-3*time.Second).UnixMilli(), k.Add(20*time.Second).UnixMilli())
	}
	lag := queryString(t, to, fmt.Sprintf(`SELECT count(*) || ' markers arrived ' || coalesce(round(max(extract(epoch FROM arrived) * 1000 - n))::text, '-') || ' ms most, '
			|| coalesce(round(avg(extract(epoch FROM arrived) * 1000 - n))::text, '-') || ' ms mean after they were inserted'
		FROM items WHERE id > %d AND %s`, markerBase, running))
	t.Logf("the first marker arrived after %d of the table's %d rows; while Conduit ran, %s", before, rows, lag)
	if before > int64(rows*9/10) {
		t.Errorf("the first change arrived after %d of the table's %d rows: changes waited for the copy", before, rows)
	}
}
