package source

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
)

// signalSettings reads a and b (addedTablesDDL) with signals in
// connkit_signals, which the source creates.
func signalSettings(fetch string) map[string]string {
	return map[string]string{"tables": "a,b", "snapshot.fetchSize": fetch, "signal.table": "connkit_signals"}
}

func sendSignal(t *testing.T, conn *pgx.Conn, id, kind, data string) {
	t.Helper()
	pgtest.Exec(t, conn, `INSERT INTO connkit_signals (id, type, data) VALUES ($1, $2, $3)`, id, kind, data)
}

// upserts is what an upserting destination holds: each record applied in
// order, snapshots and creates as upserts, by collection and id.
type upserts map[string]map[int64]int64

func (u upserts) apply(t *testing.T, recs ...sdk.Record) {
	t.Helper()
	for _, r := range recs {
		coll := r.Metadata[sdk.MetadataCollection]
		if coll != "a" && coll != "b" {
			t.Fatalf("a record of %s, at %s", coll, r.Position)
		}
		if u[coll] == nil {
			u[coll] = map[int64]int64{}
		}
		id := r.Key.(sdk.StructuredData)["id"].(int64)
		if r.Operation == sdk.OperationDelete {
			delete(u[coll], id)
			continue
		}
		u[coll][id] = r.Payload.After.(sdk.StructuredData)["n"].(int64)
	}
}

// check compares what the destination holds with the tables.
func (u upserts) check(t *testing.T, conn *pgx.Conn, tables ...string) {
	t.Helper()
	for _, table := range tables {
		want := nByID(t, conn, table)
		if got := u[table]; !maps.Equal(got, want) {
			t.Fatalf("table %s: the copy has %d rows, the source %d, or their values differ", table, len(got), len(want))
		}
	}
}

// snapshotIDs returns the ids of the snapshot records of collection,
// failing on one twice.
func snapshotIDs(t *testing.T, recs []sdk.Record, collection string) map[int64]bool {
	t.Helper()
	ids := map[int64]bool{}
	for _, r := range recs {
		if r.Operation != sdk.OperationSnapshot || r.Metadata[sdk.MetadataCollection] != collection {
			continue
		}
		id := r.Key.(sdk.StructuredData)["id"].(int64)
		if ids[id] {
			t.Fatalf("snapshot record of %s %d twice (%s)", collection, id, r.Position)
		}
		ids[id] = true
	}
	return ids
}

// createsInOrder checks that the creates of a are the writer's inserts,
// from first on, in order, none missing.
func createsInOrder(t *testing.T, recs []sdk.Record, first int64) {
	t.Helper()
	next := first
	for _, r := range recs {
		if r.Operation != sdk.OperationCreate || r.Metadata[sdk.MetadataCollection] != "a" {
			continue
		}
		if id := r.Key.(sdk.StructuredData)["id"].(int64); id != next {
			t.Fatalf("create of a %d, want %d", id, next)
		}
		next++
	}
	if next == first {
		t.Fatal("no create of a")
	}
}

// readUntilRead reads records until the slot's state row says the tables'
// reads are done, then until none comes for two seconds.
func readUntilRead(t *testing.T, s *Source, conn *pgx.Conn, tables ...string) []sdk.Record {
	t.Helper()
	ctx := t.Context()
	var out []sdk.Record
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		done := true
		for _, table := range tables {
			var d *bool
			if err := conn.QueryRow(ctx, `SELECT (tables->$1->>'done')::bool FROM connkit_snapshots`, pgx.Identifier{"public", table}.Sanitize()).Scan(&d); err != nil {
				t.Fatal(err)
			}
			done = done && d != nil && *d
		}
		if done {
			return append(out, readUntilQuiet(t, s)...)
		}
		wait, cancel := context.WithTimeout(ctx, time.Second)
		recs, err := s.ReadBatch(wait, 1000)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("after %d records: %v", len(out), err)
		}
		out = append(out, recs...)
	}
	t.Fatalf("the reads of %v did not end in two minutes", tables)
	return nil
}

// snapshotFirst opens a source, reads the first snapshot of a and b and
// acknowledges it.
func snapshotFirst(t *testing.T, url string, settings map[string]string, u upserts) *Source {
	t.Helper()
	s := openSource(t, url, settings, nil)
	recs := readN(t, s, 700)
	ackAll(t, s, recs)
	u.apply(t, recs...)
	return s
}

// An execute-snapshot signal, while rows are inserted into a and b's rows
// change, reads both tables again in chunks: every row of a there at the
// signal comes once more as a snapshot record, a's inserts stream in
// order with none missing, and a copy applying the records in order
// equals the tables.
func TestSourceSignalExecuteSnapshot(t *testing.T) {
	url, conn := sourceDB(t, addedTablesDDL)
	u := upserts{}
	s := snapshotFirst(t, url, signalSettings("25"), u)
	w := startWriter(t, url, 1000)
	sendSignal(t, conn, "s1", "execute-snapshot", `{"data-collections": ["b", "public.a"], "type": "incremental"}`)
	recs := readSnapshotOf(t, s, "b", 600, 5*time.Second)
	w.stop()
	if w.err != nil {
		t.Fatal(w.err)
	}
	recs = append(recs, readUntilRead(t, s, conn, "a", "b")...)
	ackAll(t, s, recs)
	u.apply(t, recs...)
	u.check(t, conn, "a", "b")
	createsInOrder(t, recs, 1000)
	a := snapshotIDs(t, recs, "a")
	for id := int64(1); id <= 100; id++ {
		if !a[id] {
			t.Fatalf("row %d of a did not come again", id)
		}
	}
	// Only what came after the signal, applied to an empty copy, holds b
	// whole: each row there unchanged comes again.
	after := upserts{}
	after.apply(t, recs...)

	after.check(t, conn, "b")
	t.Logf("%d records, %d snapshot records of a, %d of b, %d writer transactions", len(recs), len(a), len(snapshotIDs(t, recs, "b")), w.changes)
}

// A stop-snapshot signal without data-collections ends the read a signal
// began; a later execute-snapshot reads the table whole again.
func TestSourceSignalStopSnapshot(t *testing.T) {
	url, conn := sourceDB(t, addedTablesDDL)
	s := snapshotFirst(t, url, signalSettings("10"), upserts{})
	sendSignal(t, conn, "s1", "execute-snapshot", `{"data-collections": ["public.b"]}`)
	recs := readSnapshotOf(t, s, "b", 30, time.Minute)
	sendSignal(t, conn, "s2", "stop-snapshot", `{"type": "incremental"}`)
	recs = append(recs, readUntilQuiet(t, s)...)
	ackAll(t, s, recs)
	if n := len(snapshotIDs(t, recs, "b")); n < 30 || n >= 600 {
		t.Fatalf("%d snapshot records of b before and after the stop, want at least 30 and fewer than 600", n)
	}
	sendSignal(t, conn, "s3", "stop-snapshot", `{"data-collections": ["public.b"]}`) // nothing to stop
	sendSignal(t, conn, "s4", "execute-snapshot", `{"data-collections": ["public.b", "public.nope"]}`)
	recs = readUntilQuiet(t, s)
	ackAll(t, s, recs)
	if n := len(snapshotIDs(t, recs, "b")); n != 600 {
		t.Fatalf("%d snapshot records of b after a second signal, want 600", n)
	}
}

// A source restarted in the middle of a read a signal began, from the
// position of one of its rows and then from a change's, finishes it: the
// records after the signal hold b whole, and the copy equals the tables.
func TestSourceSignalResumed(t *testing.T) {
	url, conn := sourceDB(t, addedTablesDDL)
	u, after := upserts{}, upserts{}
	settings := signalSettings("10")
	s := snapshotFirst(t, url, settings, u)
	w := startWriter(t, url, 1000)
	sendSignal(t, conn, "s1", "execute-snapshot", `{"data-collections": ["public.b"]}`)
	var from sdk.Position
	for _, cut := range []sdk.Operation{sdk.OperationSnapshot, sdk.OperationCreate} {
		recs := readSnapshotOf(t, s, "b", 60, 15*time.Second)
		end := lastOf(recs, cut)
		ackAll(t, s, recs[:end+1])
		// The records after the last acknowledged reached the copy, as
		// they may have before a crash.
		u.apply(t, recs...)
		after.apply(t, recs...)
		from = recs[end].Position
		if err := s.Teardown(t.Context()); err != nil {
			t.Fatal(err)
		}
		s = openSource(t, url, settings, from)
	}
	recs := readSnapshotOf(t, s, "b", 1000, 2*time.Second)
	w.stop()
	if w.err != nil {
		t.Fatal(w.err)
	}
	recs = append(recs, readUntilRead(t, s, conn, "b")...)
	ackAll(t, s, recs)
	u.apply(t, recs...)
	after.apply(t, recs...)
	u.check(t, conn, "a", "b")
	after.check(t, conn, "b")
	if err := s.Teardown(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Done: a restart reads nothing again.
	s = openSource(t, url, settings, recs[len(recs)-1].Position)
	pgtest.Exec(t, conn, `INSERT INTO a VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET n = a.n + 1`)
	if recs := readUntilQuiet(t, s); len(recs) != 1 || recs[0].Operation != sdk.OperationUpdate {
		t.Fatalf("after the read, %d records, want the one update", len(recs))
	}
}

// lastOf is the index of the record of kind op a third of the way back
// from the end, or the last record's.
func lastOf(recs []sdk.Record, op sdk.Operation) int {
	var of []int
	for i, r := range recs {
		if r.Operation == op {
			of = append(of, i)
		}
	}
	if len(of) == 0 {
		return len(recs) - 1
	}
	return of[len(of)-1-len(of)/3]
}

// A signal streamed again after a restart, its read done, is not executed
// again: the rows delivered and not acknowledged come again under the
// positions they had, and no row under a new one.
func TestSourceSignalNotExecutedTwice(t *testing.T) {
	url, conn := sourceDB(t, addedTablesDDL)
	settings := signalSettings("100")
	s := snapshotFirst(t, url, settings, upserts{})
	pgtest.Exec(t, conn, `INSERT INTO a VALUES (101, 101)`)
	before := readN(t, s, 1)
	ackAll(t, s, before)
	sendSignal(t, conn, "s1", "execute-snapshot", `{"data-collections": ["public.b"]}`)
	recs := readUntilQuiet(t, s)
	if n := len(snapshotIDs(t, recs, "b")); n != 600 {
		t.Fatalf("%d snapshot records of b, want 600", n)
	}
	if err := s.Teardown(t.Context()); err != nil {
		t.Fatal(err)
	}
	first := map[string]bool{}
	for _, r := range recs {
		first[string(r.Position)] = true
	}
	s = openSource(t, url, settings, before[0].Position)
	again := readUntilQuiet(t, s)
	for _, r := range again {
		if !first[string(r.Position)] {
			t.Fatalf("a record under a new position after the restart: %s %s", r.Operation, r.Position)
		}
	}
	if len(again) == 0 {
		t.Fatal("nothing came again after the restart: the stream did not go back before the signal")
	}
	t.Logf("%d records again of %d", len(again), len(recs))
}

// A source restarted from its first snapshot's last position, Conduit not
// having stored one since, in the middle of a signal's read, streams from
// before the signal again, does not apply it twice, and finishes the read.
func TestSourceSignalResumedFromSnapshot(t *testing.T) {
	url, conn := sourceDB(t, addedTablesDDL)
	settings := signalSettings("10")
	s := openSource(t, url, settings, nil)
	first := readN(t, s, 700)
	ackAll(t, s, first)
	sendSignal(t, conn, "s1", "execute-snapshot", `{"data-collections": ["public.b"]}`)
	after := upserts{}
	after.apply(t, readSnapshotOf(t, s, "b", 60, time.Minute)...)
	if err := s.Teardown(t.Context()); err != nil {
		t.Fatal(err)
	}
	s = openSource(t, url, settings, first[len(first)-1].Position)
	after.apply(t, readUntilRead(t, s, conn, "b")...)
	after.check(t, conn, "b")
}

// A signal table without Debezium's columns, or signals without the state
// row that resumes their reads, is refused naming the parameter and the
// fix.
func TestSourceSignalTableRefused(t *testing.T) {
	url, _ := sourceDB(t, `CREATE TABLE a (id bigint PRIMARY KEY, n bigint); CREATE TABLE sig (id text PRIMARY KEY, type text)`)
	_, err := tryOpenSource(t, url, map[string]string{"tables": "a", "signal.table": "sig"}, nil)
	if err == nil || !strings.Contains(err.Error(), `parameter "signal.table": table "sig" has no column "data"`) || !strings.Contains(err.Error(), "ADD COLUMN data text") {
		t.Fatalf("a signal table without data: %v", err)
	}
	_, err = sdk.NewSource(New).New(map[string]string{"url": url, "tables": "a", "signal.table": "sig", "snapshot.mode": "never"})
	if err == nil || !strings.Contains(err.Error(), `parameter "signal.table": signals need snapshot.mode initial`) {
		t.Fatalf("signals with snapshot.mode never: %v", err)
	}
}
