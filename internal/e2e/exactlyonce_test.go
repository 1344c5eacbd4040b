//go:build linux

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	conduitpkg "github.com/connkit/connkit/internal/conduit"
	"github.com/jackc/pgx/v5"
)

// The crash tests run a pipeline into a keyless table (plain inserts, where
// a record written twice is a row twice), kill Conduit with SIGKILL and
// start it again on its badger store, kill the destination plugin, which
// Conduit restarts, and count what reached the table. In the exactly-once
// mode nothing may be missing or twice; in the default mode (at least
// once) nothing may be missing, and the duplicates are logged.

// crashEngines are Conduit's engines, with error recovery on: a killed
// plugin makes the default engine restart the pipeline. The v2 engine of
// Conduit v0.14.0 does not recover (lifecycle-poc/service.go: "TODO:
// implement recovery"), and its pipeline stalls, so there Conduit is
// killed and started again after the plugin.
var crashEngines = []struct {
	name     string
	flags    []string
	recovers bool
}{
	{"default engine", []string{"--pipelines.error-recovery.min-delay=100ms", "--pipelines.error-recovery.max-retries=20"}, true},
	{"v2 engine", []string{"--pipelines.error-recovery.min-delay=100ms", "--pipelines.error-recovery.max-retries=20", "--preview.pipeline-arch-v2"}, false},
}

var deliveryModes = []struct {
	name        string
	exactlyOnce bool
}{
	{"exactly once", true},
	{"at least once", false},
}

// The crash tests' processors: keepPosition keeps a record's position in
// its payload's field pos, dropKey drops its key, so that the destination
// inserts into a keyless table.
const (
	keepPosition = `      - id: keep-position
        plugin: field.set
        settings:
          field: .Payload.After.pos
          value: "{{ .Position }}"
`
	dropKey = `      - id: drop-key
        plugin: field.exclude
        settings:
          fields: .Key
`
)

// crash is a pipeline e2e into a keyless table, run in a Conduit that the
// test kills.
type crash struct {
	t     *testing.T
	dir   string   // Conduit's directory, kept across restarts
	flags []string // the engine's, the store's
	url   string   // the destination database
	c     *conduit
}

func startCrash(t *testing.T, pipeline, url string, flags []string) *crash {
	t.Helper()
	adoptOrphans(t) // to wait for the plugins a killed Conduit leaves
	state := filepath.Join(t.TempDir(), "conduit.db")
	cr := &crash{t: t, dir: t.TempDir(), url: url, flags: append([]string{"--db.type", "badger", "--db.badger.path", state}, flags...)}
	cr.c = startServer(t, conduitpkg.Options{
		Bin:      conduitBin(t),
		Dir:      cr.dir,
		Pipeline: pipeline,
		Plugins:  []string{binary("connkit-generator"), binary("connkit-postgres")},
		Flags:    cr.flags,
	})
	return cr
}

// waitFor waits until query, a count, reaches want, failing if Conduit
// exits first or it takes three minutes.
func (cr *crash) waitFor(query string, want int64) {
	cr.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		n := count(cr.t, cr.url, query)
		if n >= want {
			return
		}
		select {
		case <-cr.c.Done():
			cr.t.Fatalf("Conduit exited (%v) at %d of %d (%s)", cr.c.Err(), n, want, query)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cr.t.Fatalf("%d of %d after 3 minutes (%s)", n, want, query)
		}
	}
}

// killConduit kills Conduit with SIGKILL, waits for its plugins to exit,
// and starts it again on the same directory and store.
func (cr *crash) killConduit() {
	cr.t.Helper()
	var plugins []int
	for _, bin := range []string{"connkit-generator", "connkit-postgres"} {
		plugins = append(plugins, childrenRunning(cr.t, cr.c.Pid(), binary(bin))...)
	}
	cr.c.Kill()
	// A plugin left writing would be a second writer next to the new one.
	if len(reap(cr.t, plugins, 0)) > 0 {
		cr.t.FailNow()
	}
	cr.c = runConduit(cr.t, conduitBin(cr.t), cr.dir, cr.flags...)
}

// startedOver reports whether, in any of Conduit's runs, the Postgres
// source was opened without a position while its slot existed, and so
// started over; it logs that it did.
func (cr *crash) startedOver() bool {
	cr.t.Helper()
	logs, _ := filepath.Glob(filepath.Join(cr.dir, "conduit*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		if strings.Contains(string(b), "Conduit gave no position, but replication slot") {
			cr.t.Logf("Conduit opened the source without its position (%s): it started over, so only at least once holds", filepath.Base(l))
			return true
		}
	}
	return false
}

// waitPersisted waits until Conduit has stored a position for the source
// connector id, failing if that does not happen within a minute. Its API
// shows a position as soon as it is acked; the store gets it with the
// next flush, about a second later, which this waits for too.
func (cr *crash) waitPersisted(id string) {
	cr.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		pos, err := cr.c.SourcePosition(id)
		if err == nil && len(pos) > 0 {
			time.Sleep(1500 * time.Millisecond)
			return
		}
		if time.Now().After(deadline) {
			cr.t.Fatalf("Conduit stored no position of %s in a minute (%v)", id, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killDestination kills the destination's plugin with SIGKILL, once one
// runs (Conduit may be restarting the pipeline); the pipeline goes on with
// a new one, which Conduit starts when its engine recovers, or else after
// Conduit is killed and started again too.
func (cr *crash) killDestination(recovers bool) {
	cr.t.Helper()
	cr.killPlugin()
	if !recovers {
		cr.killConduit()
	}
}

func (cr *crash) killPlugin() {
	cr.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		for _, pid := range childrenRunning(cr.t, cr.c.Pid(), binary("connkit-postgres")) {
			env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			if err == nil && bytes.Contains(env, []byte("CONDUIT_CONNECTOR_ID=e2e:destination\x00")) {
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					cr.t.Fatal(err)
				}
				return
			}
		}
		select {
		case <-cr.c.Done():
			cr.t.Fatalf("Conduit exited (%v)", cr.c.Err())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cr.t.Fatal("no destination plugin ran for a minute")
		}
	}
}

// check stops Conduit and checks the table's rows, one per id in 1 to
// want: none missing, and, in the exactly-once mode, none twice.
func (cr *crash) check(table, id string, want int64, exactlyOnce bool) {
	cr.t.Helper()
	cr.waitFor(`SELECT count(DISTINCT `+id+`) FROM `+table, want)
	cr.c.stop()
	rows := count(cr.t, cr.url, `SELECT count(*) FROM `+table)
	distinct := count(cr.t, cr.url, `SELECT count(DISTINCT `+id+`) FROM `+table+` WHERE `+id+` BETWEEN 1 AND `+fmt.Sprint(want))
	missing, duplicated := want-distinct, rows-distinct
	cr.t.Logf("rows %d, missing %d, duplicated %d", want, missing, duplicated)
	if missing != 0 {
		cr.t.Errorf("%d of %d rows missing", missing, want)
	}
	if exactlyOnce && duplicated != 0 {
		cr.t.Errorf("%d rows written twice", duplicated)
	}
}

// slowWrites makes each statement that inserts into table (an INSERT, a
// COPY) sleep for 50 ms before it runs, so that the destination keeps
// several Writes in flight, which the crash tests wait for before they
// kill.
func slowWrites(table string) string {
	return `; CREATE FUNCTION slow_writes() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.05); RETURN NULL; END $$;
		CREATE TRIGGER slow_writes BEFORE INSERT ON ` + table + ` FOR EACH STATEMENT EXECUTE FUNCTION slow_writes()`
}

// waitForWrites waits until at least n statements of the destination are
// sleeping in slowWrites' trigger at once, that is n Writes in flight
// together, failing if that does not happen within a minute.
func (cr *crash) waitForWrites(n int64) {
	cr.t.Helper()
	const sleeping = `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'`
	deadline := time.Now().Add(time.Minute)
	for count(cr.t, cr.url, sleeping) < n {
		if time.Now().After(deadline) {
			cr.t.Fatalf("never %d Writes in flight together in a minute", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestExactlyOnceGenerator runs standalone:generator into a keyless table
// (the key dropped, the position kept in a column) whose inserts are slow,
// kills Conduit at a fifth of the records, then the destination plugin at
// two fifths and three fifths, each time while two Writes or more are in
// flight.
func TestExactlyOnceGenerator(t *testing.T) {
	const records = 20000
	for _, engine := range crashEngines {
		for _, mode := range deliveryModes {
			t.Run(engine.name+"/"+mode.name, func(t *testing.T) {
				url, _ := pg.Database(t, `CREATE TABLE generated (pos bigint, name text, n bigint, at timestamptz)`+slowWrites("generated"))
				// Batches of 10 fill while Writes are slow, and a full batch
				// that waits makes auto add a Write; the v2 engine sends one
				// batch of the source's (about 40 records) at a time, which
				// goes in several Writes.
				destination := map[string]string{"url": url, "table": "generated", "exactlyOnce.enabled": fmt.Sprint(mode.exactlyOnce), "sdk.batch.size": "10"}
				pipeline := pipelineYAML("standalone:generator", merge(generatorSettings(records), map[string]string{
					"rate": "4000", "sdk.batch.size": "500", "sdk.batch.delay": "10ms",
				}), "standalone:postgres", destination) + "    processors:\n" + keepPosition + dropKey
				cr := startCrash(t, pipeline, url, engine.flags)
				const rows = `SELECT count(*) FROM generated`
				cr.waitFor(rows, records/5)
				cr.waitForWrites(2)
				cr.killConduit()
				for _, at := range []int64{2 * records / 5, 3 * records / 5} {
					cr.waitFor(rows, at)
					cr.waitForWrites(2)
					cr.killDestination(engine.recovers)
				}
				cr.check("generated", "pos", records, mode.exactlyOnce)
			})
		}
	}
}

// TestExactlyOncePostgresSource runs standalone:postgres (snapshot, then
// changes) into a keyless copy of the table: it kills Conduit during the
// snapshot while rows are being inserted into the source table, so that
// the snapshot resumes under a fresh snapshot; again as soon as changes
// arrive after the snapshot; then it kills the destination plugin twice.
func TestExactlyOncePostgresSource(t *testing.T) {
	const snapshot, changes = 20000, 10000
	for _, engine := range crashEngines {
		for _, mode := range deliveryModes {
			t.Run(engine.name+"/"+mode.name, func(t *testing.T) {
				from, src := sourceDatabase(t, `CREATE TABLE items (id int PRIMARY KEY, n bigint);
					INSERT INTO items SELECT i, i FROM generate_series(1, `+fmt.Sprint(snapshot)+`) i`)
				url, _ := pg.Database(t, `CREATE TABLE items (id int, n bigint)`)
				pipeline := pipelineYAML("standalone:postgres", map[string]string{
					"url": from, "tables": "items", "slot.name": dbName(from), "snapshot.fetchSize": "1000",
					"sdk.batch.size": "500", "sdk.batch.delay": "10ms",
				}, "standalone:postgres", map[string]string{
					"url": url, "exactlyOnce.enabled": fmt.Sprint(mode.exactlyOnce),
				}) + "    processors:\n" + dropKey
				cr := startCrash(t, pipeline, url, engine.flags)
				last := snapshot
				// Rows inserted while the snapshot is read, and across the
				// kill, until the snapshot's rows are through.
				inserting := keepInserting(t, from, "items", last+1)
				cr.waitFor(`SELECT count(*) FROM items`, snapshot/4)
				cr.waitPersisted("e2e:source") // or it starts over (see startedOver)
				cr.killConduit()
				cr.waitFor(`SELECT count(DISTINCT id) FROM items WHERE id <= `+fmt.Sprint(snapshot), snapshot)
				// Killed again as soon as changes arrive after the snapshot,
				// once Conduit has stored a position: it stores them about
				// once a second, so it restarts from a position of a chunk
				// after changes were delivered, most times. (Had it stored
				// none, the source would start over with a new slot, and
				// rows that came as changes would come again in the new
				// snapshot, under positions of their own.)
				cr.waitPersisted("e2e:source")
				cr.waitFor(`SELECT count(*) FROM items WHERE id > `+fmt.Sprint(snapshot), 1)
				cr.killConduit()
				last = inserting.stop()
				t.Logf("%d rows inserted during the snapshot", last-snapshot)
				if err := insertItems(t.Context(), src, last+1, 100, 100); err != nil {
					t.Fatal(err)
				}
				last += 100
				cr.waitFor(`SELECT count(DISTINCT id) FROM items`, int64(last))
				t.Logf("went on with the snapshot after a restart: %v", strings.Contains(cr.c.Log(), "postgres: going on with the snapshot"))
				// Changes in transactions of 100 rows, while the destination
				// is killed.
				if err := insertItems(t.Context(), src, last+1, changes, 100); err != nil {
					t.Fatal(err)
				}
				for _, at := range []int{last + changes/4, last + changes/2} {
					cr.waitFor(`SELECT count(*) FROM items WHERE id > `+fmt.Sprint(snapshot), int64(at-snapshot))
					cr.killDestination(engine.recovers)
				}
				last += changes
				// A Conduit killed before its store had a position opens
				// the source without one (its API shows a position as soon
				// as it is acked; the store gets it about a second later),
				// and the source then starts over: the rows it streamed as
				// changes come again in a new snapshot, under new
				// positions. Only at least once can hold across such a
				// restart, which waitPersisted keeps from happening here.
				exactlyOnce := mode.exactlyOnce && !cr.startedOver()
				cr.check("items", "id", int64(last), exactlyOnce)
			})
		}
	}
}

// insertItems inserts the rows first to first+n-1 into items, in
// transactions of size rows.
func insertItems(ctx context.Context, conn *pgx.Conn, first, n, size int) error {
	_, err := conn.Exec(ctx, fmt.Sprintf(`DO $$ BEGIN
		FOR b IN 0..%d LOOP
			INSERT INTO items SELECT i, i FROM generate_series(%d + b * %d, %d + b * %d) i;
			COMMIT;
		END LOOP; END $$`, n/size-1, first, size, first+size-1, size))
	return err
}

// inserter inserts rows into items, ten per transaction, one transaction
// every 10ms, until stopped.
type inserter struct {
	t       *testing.T
	stopped chan struct{}
	done    chan struct{}
	next    int // the next row's id, once done is closed
	err     error
}

// keepInserting inserts rows (id, id) into table from id first on, ten
// per transaction, one transaction every 10ms, until stopped.
func keepInserting(t *testing.T, url, table string, first int) *inserter {
	return keepRunning(t, url, `INSERT INTO `+table+` SELECT i, i FROM generate_series($1::int, $1::int + 9) i`, first)
}

// keepRunning runs insert, which inserts ten rows from id $1 on, with $1
// from first on, one transaction every 10ms, until stopped.
func keepRunning(t *testing.T, url, insert string, first int) *inserter {
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	in := &inserter{t: t, stopped: make(chan struct{}), done: make(chan struct{}), next: first}
	go func() {
		defer close(in.done)
		defer conn.Close(context.Background())
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-in.stopped:
				return
			case <-tick.C:
			}
			if _, in.err = conn.Exec(context.Background(), insert, in.next); in.err != nil {
				return
			}
			in.next += 10
		}
	}()
	t.Cleanup(func() { in.stop() })
	return in
}

// stop stops the inserts and returns the last row's id.
func (in *inserter) stop() int {
	in.t.Helper()
	select {
	case <-in.stopped:
	default:
		close(in.stopped)
	}
	<-in.done
	if in.err != nil {
		in.t.Fatalf("insert rows while the snapshot is read: %v", in.err)
	}
	return in.next - 1
}
