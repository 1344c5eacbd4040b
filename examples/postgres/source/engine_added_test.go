package source

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
)

// addedTablesDDL is two tables of (id, n): a with 100 rows, which the
// source snapshots first, and b with 600, added later.
const addedTablesDDL = `
	CREATE TABLE a (id bigint PRIMARY KEY, n bigint NOT NULL);
	CREATE TABLE b (id bigint PRIMARY KEY, n bigint NOT NULL);
	INSERT INTO a SELECT i, i FROM generate_series(1, 100) i;
	INSERT INTO b SELECT i, i FROM generate_series(1, 600) i;`

// writer changes both tables until stopped: inserts into a, and updates,
// deletes and inserts on b's keys (1 to 800, ahead of and behind the
// chunks), some of them several in one transaction.
type writer struct {
	stopped chan struct{}
	ended   chan struct{} // closed when the writer's goroutine has returned
	err     error
	changes int
}

func startWriter(t *testing.T, url string, firstA int) *writer {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	w := &writer{stopped: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(w.ended)
		defer conn.Close(context.Background())
		ctx := context.Background()
		for i := firstA; ; i++ {
			select {
			case <-w.stopped:
				return
			default:
			}
			batch := &pgx.Batch{}
			batch.Queue(`INSERT INTO a VALUES ($1::bigint, $1::bigint)`, i)
			for range 1 + rand.IntN(3) {
				switch k := 1 + rand.IntN(800); rand.IntN(3) {
				case 0:
					batch.Queue(`UPDATE b SET n = n + 1 WHERE id = $1`, k)
				case 1:
					batch.Queue(`DELETE FROM b WHERE id = $1`, k)
				default:
					batch.Queue(`INSERT INTO b VALUES ($1::bigint, -$1::bigint) ON CONFLICT (id) DO UPDATE SET n = b.n + 1000`, k)
				}
			}
			if err := conn.SendBatch(ctx, batch).Close(); err != nil {
				w.err = err
				return
			}
			w.changes++
			time.Sleep(2 * time.Millisecond)
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *writer) stop() {
	select {
	case <-w.stopped:
	default:
		close(w.stopped)
	}
	<-w.ended
}

// readUntilQuiet reads records until none comes for two seconds.
func readUntilQuiet(t *testing.T, s *Source) []sdk.Record {
	t.Helper()
	var out []sdk.Record
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		recs, err := s.ReadBatch(ctx, 1000)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
}

// readUntilCopied reads records into m until the copy equals the tables,
// for at most a minute, then until none comes for two seconds: a source
// slowed down by a busy machine is waited for, and a record that comes
// once the copy is whole still reaches m. It returns the records read.
func readUntilCopied(t *testing.T, s *Source, m *copyModel, conn *pgx.Conn, tables ...string) []sdk.Record {
	t.Helper()
	var out []sdk.Record
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && len(m.differences(conn, tables...)) > 0; {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		recs, err := s.ReadBatch(ctx, 1000)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
		m.apply(recs...)
		out = append(out, recs...)
	}
	rest := readUntilQuiet(t, s)
	m.apply(rest...)
	return append(out, rest...)
}

// readSnapshotOf reads until n snapshot records of collection have come,
// or for at most d.
func readSnapshotOf(t *testing.T, s *Source, collection string, n int, d time.Duration) []sdk.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	var out []sdk.Record
	for seen := 0; seen < n; {
		recs, err := s.ReadBatch(ctx, 1)
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
		if recs[0].Operation == sdk.OperationSnapshot && recs[0].Metadata[sdk.MetadataCollection] == collection {
			seen++
		}
	}
	return out
}

// firstRun snapshots a alone, streams a few of its changes and returns the
// last position acked.
func firstRun(t *testing.T, url string, conn *pgx.Conn, m *copyModel) sdk.Position {
	t.Helper()
	s := openSource(t, url, map[string]string{"tables": "a", "snapshot.fetchSize": "40"}, nil)
	recs := readN(t, s, 100)
	pgtest.Exec(t, conn, `INSERT INTO a SELECT i, i FROM generate_series(101, 110) i`)
	recs = append(recs, readN(t, s, 10)...)
	ackAll(t, s, recs)
	m.apply(recs...)
	if err := s.Teardown(t.Context()); err != nil {
		t.Fatal(err)
	}
	return recs[len(recs)-1].Position
}

// checkAdded checks that no snapshot record of a came after the restart,
// that the snapshot records of b are each a row version once, and that no
// position came twice.
func checkAdded(t *testing.T, recs []sdk.Record) (snapshots int) {
	t.Helper()
	positions := map[string]bool{}
	for _, r := range recs {
		if positions[string(r.Position)] {
			t.Fatalf("position %s twice", r.Position)
		}
		positions[string(r.Position)] = true
		if r.Operation != sdk.OperationSnapshot {
			continue
		}
		if r.Metadata[sdk.MetadataCollection] != "b" {
			t.Fatalf("a snapshot record of %s after the restart: %s", r.Metadata[sdk.MetadataCollection], r.Position)
		}
		p, err := parsePosition(r.Position)
		if err != nil || !p.inChunk() {
			t.Fatalf("position %s of an added table's row: %v", r.Position, err)
		}
		snapshots++
	}
	return snapshots
}

// A table added to a streaming source is snapshotted in chunks while
// changes to both tables stream: applied as an exactly-once destination
// would, the records hold both tables' rows, none twice, none missing.
func TestSourceAddedTable(t *testing.T) {
	url, conn := sourceDB(t, addedTablesDDL)
	m := newCopyModel(t)
	from := firstRun(t, url, conn, m)

	s := openSource(t, url, map[string]string{"tables": "a,b", "snapshot.fetchSize": "10"}, from)
	w := startWriter(t, url, 1000)
	recs := readSnapshotOf(t, s, "b", 1000, 3*time.Second)
	w.stop()
	if w.err != nil {
		t.Fatal(w.err)
	}
	m.apply(recs...)
	recs = append(recs, readUntilCopied(t, s, m, conn, "a", "b")...)
	ackAll(t, s, recs)
	snapshots := checkAdded(t, recs)
	m.check(conn, "a", "b")
	t.Logf("%d records, %d of them snapshot records of b, %d writer transactions", len(recs), snapshots, w.changes)
	if snapshots == 0 {
		t.Fatal("no snapshot record of b")
	}
}

// A source restarted in the middle of an added table's snapshot, from the
// position of one of its rows and then from a change's, goes on where it
// was: rows delivered and not acknowledged come again under the positions
// they had, and the copy has each row once.
func TestSourceAddedTableResumed(t *testing.T) {
	url, conn := sourceDB(t, addedTablesDDL)
	m := newCopyModel(t)
	from := firstRun(t, url, conn, m)

	w := startWriter(t, url, 1000)
	settings := map[string]string{"tables": "a,b", "snapshot.fetchSize": "10"}
	var all []sdk.Record
	var again int
	for round, cut := range []sdk.Operation{sdk.OperationSnapshot, sdk.OperationCreate} {
		s := openSource(t, url, settings, from)
		recs := readSnapshotOf(t, s, "b", 60, 5*time.Second)
		// Acknowledge up to a record of the kind cut a third of the way
		// back; the records after it reached the destination
		// unacknowledged.
		var of []int
		for i, r := range recs {
			if r.Operation == cut {
				of = append(of, i)
			}
		}
		end := len(recs) - 1
		if len(of) > 0 {
			end = of[len(of)-1-len(of)/3]
		}
		ackAll(t, s, recs[:end+1])
		for _, r := range recs {
			if m.positions[string(r.Position)] {
				again++
			}
		}
		m.apply(recs...)
		all = append(all, recs...)
		from = recs[end].Position
		if err := s.Teardown(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: restart from %s", round, from)
	}
	s := openSource(t, url, settings, from)
	recs := readSnapshotOf(t, s, "b", 1000, 2*time.Second)
	w.stop()
	if w.err != nil {
		t.Fatal(w.err)
	}
	for _, r := range recs {
		if m.positions[string(r.Position)] {
			again++
		}
	}
	m.apply(recs...)
	recs = append(recs, readUntilCopied(t, s, m, conn, "a", "b")...)
	all = append(all, recs...)
	m.check(conn, "a", "b")
	t.Logf("%d records, %d delivered again under their positions, %d writer transactions", len(all), again, w.changes)
}

// A table removed from tables is forgotten: added again, it is read whole
// again, since its changes were not read meanwhile; each of its rows comes
// once, in a chunk or as its change.
func TestSourceAddedTableRemovedAndAddedAgain(t *testing.T) {
	url, conn := sourceDB(t, addedTablesDDL)
	from := firstRun(t, url, conn, newCopyModel(t))
	for round, tables := range []string{"a,b", "a", "a,b"} {
		s := openSource(t, url, map[string]string{"tables": tables, "snapshot.fetchSize": "100"}, from)
		pgtest.Exec(t, conn, `INSERT INTO a VALUES ($1::bigint, 0)`, 1000+round)
		pgtest.Exec(t, conn, `INSERT INTO b VALUES ($1::bigint, 0)`, 1000+round)
		recs := readUntilQuiet(t, s)
		ackAll(t, s, recs)
		checkAdded(t, recs)
		ids := map[int64]bool{}
		for _, r := range recs {
			if r.Metadata[sdk.MetadataCollection] != "b" {
				continue
			}
			id := r.Key.(sdk.StructuredData)["id"].(int64)
			if ids[id] {
				t.Fatalf("round %d: b %d twice", round, id)
			}
			ids[id] = true
		}
		var want int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM b`).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if tables == "a" {
			want = 0
		}
		if len(ids) != want {
			t.Fatalf("round %d, tables %s: %d rows of b, want %d", round, tables, len(ids), want)
		}
		from = recs[len(recs)-1].Position
		if err := s.Teardown(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// An update of an added table's row not yet read that leaves a TOASTed
// value unchanged carries the value: the row's chunk leaves that version
// out, so the update is all the destination gets of it.
func TestSourceAddedTableUnchangedToast(t *testing.T) {
	url, conn := sourceDB(t, `
		CREATE TABLE a (id bigint PRIMARY KEY, n bigint NOT NULL);
		CREATE TABLE b (id bigint PRIMARY KEY, n bigint NOT NULL, big text);
		INSERT INTO a SELECT i, i FROM generate_series(1, 100) i;
		INSERT INTO b SELECT i, i, (SELECT string_agg(md5(random()::text || j), '') FROM generate_series(1, 300) j) FROM generate_series(1, 300) i;`)
	from := firstRun(t, url, conn, newCopyModel(t))
	s := openSource(t, url, map[string]string{"tables": "a,b", "snapshot.fetchSize": "10"}, from)
	pgtest.Exec(t, conn, `UPDATE b SET n = n + 1 WHERE id > 250`)
	recs := readUntilQuiet(t, s)
	updates := 0
	for _, r := range recs {
		if r.Metadata[sdk.MetadataCollection] != "b" {
			continue
		}
		if r.Operation == sdk.OperationUpdate {
			updates++
		}
		if big, _ := r.Payload.After.(sdk.StructuredData)["big"].(string); len(big) != 300*32 {
			t.Fatalf("%s of b %v without its TOASTed value", r.Operation, r.Key)
		}
	}
	if updates != 50 {
		t.Fatalf("%d updates of b, want 50", updates)
	}
}

// A transaction that writes an added table both before and after the
// source adds the table to its publication streams only its later
// changes; its earlier ones reach the copy too, once.
func TestSourceAddedTableWrittenAcrossItsAddition(t *testing.T) {
	url, conn := sourceDB(t, addedTablesDDL)
	m := newCopyModel(t)
	from := firstRun(t, url, conn, m)

	tx, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close(context.Background())
	pgtest.Exec(t, tx, `BEGIN; INSERT INTO b SELECT i, i FROM generate_series(1001, 1003) i; UPDATE b SET n = -1 WHERE id IN (1, 2)`)
	type opened struct {
		s   *Source
		err error
	}
	done := make(chan opened, 1)
	go func() {
		s, err := tryOpenSource(t, url, map[string]string{"tables": "a,b", "snapshot.fetchSize": "100"}, from)
		done <- opened{s, err}
	}()
	// Open adds b to the publication, then waits for the transaction to
	// end before the snapshot of b is taken.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var added bool
		if err := conn.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_publication_tables WHERE tablename = 'b')`).Scan(&added); err != nil {
			t.Fatal(err)
		}
		if added {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b was not added to the publication in a minute")
		}
	}
	pgtest.Exec(t, tx, `INSERT INTO b SELECT i, i FROM generate_series(1004, 1006) i; UPDATE b SET n = -2 WHERE id IN (3, 4); COMMIT`)
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	recs := readUntilCopied(t, o.s, m, conn, "a", "b")
	ackAll(t, o.s, recs)
	checkAdded(t, recs)
	m.check(conn, "a", "b")
}
