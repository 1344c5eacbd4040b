package source

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// copyModel applies a source's records to a model of its tables the way a
// destination in the exactly-once mode would (a record whose position it
// has is skipped), and fails the test on a record that would put a row
// there twice: a row created, read or moved to a key that it already
// holds. An update of a row it does not hold puts the row there (an
// upsert): a row changed before its chunk is read comes as its changes
// alone. A delete of a row it
// does not hold is a no-op: the source cannot know which records in
// flight before a restart reached the destination.
type copyModel struct {
	t         *testing.T
	rows      map[string]map[int64]int64 // collection, id: n
	positions map[string]bool
}

func newCopyModel(t *testing.T) *copyModel {
	return &copyModel{t: t, rows: map[string]map[int64]int64{}, positions: map[string]bool{}}
}

func (m *copyModel) apply(recs ...sdk.Record) {
	m.t.Helper()
	for _, r := range recs {
		if m.positions[string(r.Position)] {
			continue
		}
		m.positions[string(r.Position)] = true
		coll := r.Metadata[sdk.MetadataCollection]
		if m.rows[coll] == nil {
			m.rows[coll] = map[int64]int64{}
		}
		rows := m.rows[coll]
		id := r.Key.(sdk.StructuredData)["id"].(int64)
		_, held := rows[id]
		switch r.Operation {
		case sdk.OperationSnapshot, sdk.OperationCreate:
			n := r.Payload.After.(sdk.StructuredData)["n"].(int64)
			// A row read again is read under the position it had, unless
			// it changed, and then it is not read again but comes as its
			// changes: a row read or created where one is held is a row
			// twice.
			if held {
				m.t.Fatalf("%s %s %d at %s: the row is already there", r.Operation, coll, id, r.Position)
			}
			rows[id] = n
		case sdk.OperationUpdate:
			old := id
			if before, ok := r.Payload.Before.(sdk.StructuredData); ok {
				old = before["id"].(int64)
			}
			if old != id && held {
				m.t.Fatalf("update %s %d to %d at %s: the new key is already there", coll, old, id, r.Position)
			}
			delete(rows, old)
			rows[id] = r.Payload.After.(sdk.StructuredData)["n"].(int64)
		case sdk.OperationDelete:
			delete(rows, id)
		}
	}
}

// check compares the model with the tables.
func (m *copyModel) check(conn *pgx.Conn, tables ...string) {
	m.t.Helper()
	if diffs := m.differences(conn, tables...); len(diffs) > 0 {
		for _, d := range diffs {
			m.t.Error(d)
		}
		m.t.FailNow()
	}
}

// differences returns where the model and the tables differ, a line each.
func (m *copyModel) differences(conn *pgx.Conn, tables ...string) []string {
	m.t.Helper()
	var diffs []string
	for _, table := range tables {
		want := map[int64]int64{}
		rs, err := conn.Query(m.t.Context(), `SELECT id, n FROM `+table)
		if err != nil {
			m.t.Fatal(err)
		}
		var id, n int64
		if _, err := pgx.ForEachRow(rs, []any{&id, &n}, func() error { want[id] = n; return nil }); err != nil {
			m.t.Fatal(err)
		}
		got := m.rows[table]
		for id, n := range want {
			if g, ok := got[id]; !ok || g != n {
				diffs = append(diffs, fmt.Sprintf("%s %d: table has n=%d, the copy has %d (present: %v)", table, id, n, g, ok))
			}
		}
		for id := range got {
			if _, ok := want[id]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s %d: in the copy, not in the table", table, id))
			}
		}
	}
	return diffs
}

// A snapshot resumed from a position in its middle, after writes on both
// sides of the resume key and in a later table, and with writes going on
// while it resumes, delivers each row once: applied as a keyless
// destination would, the stream holds the tables' rows, none twice. A
// restart among the changes goes on with the same positions.
func TestSourceResumedSnapshotExactlyOnce(t *testing.T) {
	url, conn := sourceDB(t, `
		CREATE TABLE a (id int PRIMARY KEY, n bigint);
		CREATE TABLE b (id int PRIMARY KEY, n bigint);
		CREATE TABLE z (id int PRIMARY KEY, n bigint);
		INSERT INTO a SELECT i, 0 FROM generate_series(1, 100) i;
		INSERT INTO b SELECT i, 0 FROM generate_series(1, 50) i;
	`)
	settings := map[string]string{"tables": "*", "snapshot.fetchSize": "7"}
	m := newCopyModel(t)
	resumeAt := deliverUpTo45(t, url, settings, m)
	writeBeforeResume(t, conn)
	writes := writeDuringResume(t, url)

	// The resumed run: the rest of the snapshot, then changes, stopped
	// after the first change of the second transaction; the next run
	// resumes after it.
	s := openSource(t, url, settings, resumeAt)
	read := readIntoSecondTransaction(t, s, m)
	change := read[len(read)-1]
	ackAll(t, s, read)
	if err := s.Teardown(t.Context()); err != nil {
		t.Fatal(err)
	}

	// Once the writes are done, a row in z marks the end of the changes.
	if err := writes(); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, conn, `INSERT INTO z VALUES (1, 1)`)
	s = openSource(t, url, settings, change.Position)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for m.rows["z"] == nil {
		recs, err := s.ReadBatch(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		m.apply(recs...)
	}
	m.check(conn, "a", "b", "z")
}

// deliverUpTo45 is a first run that delivers a's rows up to 45, and stops
// with 40 acknowledged: the destination holds 41 to 45 too. It returns the
// position of 40.
func deliverUpTo45(t *testing.T, url string, settings map[string]string, m *copyModel) sdk.Position {
	t.Helper()
	s := openSource(t, url, settings, nil)
	first := readN(t, s, 45)
	m.apply(first...)
	first = first[:40]
	ackAll(t, s, first)
	if err := s.Teardown(t.Context()); err != nil {
		t.Fatal(err)
	}
	resumeAt := first[len(first)-1].Position
	if !strings.HasPrefix(string(resumeAt), `{"table":"\"public\".\"a\"","key":["40"]`) {
		t.Fatalf("resume position %s", resumeAt)
	}
	return resumeAt
}

// writeBeforeResume writes before the resume (44, in flight, changes: its
// new version comes under a new position; 43, in flight, is deleted):
// inserts, updates and deletes on both sides of key 40 (10 < 40 < 100 also
// as text), keys moved across it both ways and on either side, in a later
// table, in one transaction and in several.
func writeBeforeResume(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	pgtest.Exec(t, conn, `BEGIN; DELETE FROM a WHERE id = 50; INSERT INTO a VALUES (-1, 1), (1000, 1); COMMIT`)
	pgtest.Exec(t, conn, `BEGIN;
		UPDATE a SET n = 2 WHERE id IN (10, 44, 60, 100);
		UPDATE b SET n = 2 WHERE id = 10;
		INSERT INTO b VALUES (1000, 2);
		DELETE FROM a WHERE id IN (15, 43, 90); -- 43: in flight
		DELETE FROM b WHERE id = 20;
		COMMIT`)
	pgtest.Exec(t, conn, `UPDATE a SET id = 2000 WHERE id = 20`)       // delivered -> to be read
	pgtest.Exec(t, conn, `UPDATE a SET id = -70 WHERE id = 70`)        // to be read -> delivered
	pgtest.Exec(t, conn, `UPDATE a SET id = -30 WHERE id = 30`)        // delivered -> delivered
	pgtest.Exec(t, conn, `UPDATE a SET id = 3000 WHERE id = 80`)       // to be read -> to be read
	pgtest.Exec(t, conn, `UPDATE a SET id = 0, n = 3 WHERE id = 1000`) // moved twice
	pgtest.Exec(t, conn, `UPDATE a SET id = 1000 WHERE id = 0`)
	pgtest.Exec(t, conn, `INSERT INTO a VALUES (50, 5)`) // deleted in a transaction before the one the last run resumes in
}

// writeDuringResume writes to a and b while the snapshot resumes, and
// returns a function that waits for the writes to end.
func writeDuringResume(t *testing.T, url string) (wait func() error) {
	writer, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer writer.Close(context.Background())
		for i := 1; i <= 150 && werr == nil; i++ {
			sql := fmt.Sprintf(`BEGIN;
				UPDATE a SET n = n + 1 WHERE id IN (%[2]d, %[3]d);
				INSERT INTO a VALUES (%[4]d, %[1]d), (%[5]d, %[1]d);
				INSERT INTO b VALUES (%[5]d, %[1]d);
				DELETE FROM a WHERE id = %[5]d - 5;
				DELETE FROM b WHERE id = %[1]d;
				COMMIT`, i, i%40+1, 46+i%55, -100-i, 5000+i)
			if i%10 == 0 {
				sql += fmt.Sprintf(`;
					UPDATE a SET id = %d WHERE id = (SELECT min(id) FROM a WHERE id BETWEEN 1 AND 40);
					UPDATE a SET id = %d WHERE id = (SELECT max(id) FROM a WHERE id BETWEEN 46 AND 100)`, 10000+i, -10000-i)
			}
			_, werr = writer.Exec(context.Background(), sql)
		}
	}()
	t.Cleanup(wg.Wait) // also when the test fails
	return func() error {
		wg.Wait()
		return werr
	}
}

// readIntoSecondTransaction reads records one at a time, applying each to
// m, up to the first change of the second transaction of changes.
func readIntoSecondTransaction(t *testing.T, s *Source, m *copyModel) []sdk.Record {
	t.Helper()
	var read []sdk.Record
	var firstLSN pglogrepl.LSN
	for {
		r := readN(t, s, 1)[0]
		m.apply(r)
		read = append(read, r)
		if r.Operation == sdk.OperationSnapshot {
			continue
		}
		lsn, err := positionLSN(r.Position)
		if err != nil {
			t.Fatal(err)
		}
		if firstLSN == 0 {
			firstLSN = lsn
		} else if lsn != firstLSN {
			return read
		}
	}
}

// A restart from a position of the snapshot after changes were delivered
// (Conduit persists a source's position about once a second, so a crash
// right after the snapshot ends leaves a snapshot position behind) gives
// every record delivered before it again under the position it had: the
// rows the snapshot read, unchanged since, and the changes, none of them
// as a snapshot record. The first update of a row after the resume point
// carries the TOASTed value it left unchanged, which the destination has
// from no other record of this run.
func TestSourceResumedAfterChangesDelivered(t *testing.T) {
	url, conn := sourceDB(t, `
		CREATE TABLE a (id int PRIMARY KEY, n bigint, big text);
		ALTER TABLE a ALTER COLUMN big SET STORAGE EXTERNAL;
		INSERT INTO a SELECT i, 0, NULL FROM generate_series(1, 50) i;
		UPDATE a SET big = repeat('toasted ', 2000) WHERE id = 30;
	`)
	settings := map[string]string{"tables": "a", "snapshot.fetchSize": "7"}
	m := newCopyModel(t)

	s := openSource(t, url, settings, nil)
	first := readN(t, s, 50)
	pgtest.Exec(t, conn, `BEGIN; INSERT INTO a SELECT i, 1, NULL FROM generate_series(51, 55) i; UPDATE a SET n = 1 WHERE id IN (30, 40); COMMIT`)
	pgtest.Exec(t, conn, `DELETE FROM a WHERE id = 45`)
	first = append(first, readN(t, s, 8)...)
	m.apply(first...)
	delivered := map[string]bool{}
	for _, r := range first {
		delivered[string(r.Position)] = true
		if r.Operation == sdk.OperationUpdate && r.Key.(sdk.StructuredData)["id"] == int64(30) {
			if _, ok := r.Payload.After.(sdk.StructuredData)["big"]; ok {
				t.Fatal("the update of row 30 carries its unchanged TOASTed value: the test needs one that does not")
			}
		}
	}
	ackAll(t, s, first[:20])
	if err := s.Teardown(t.Context()); err != nil {
		t.Fatal(err)
	}

	pgtest.Exec(t, conn, `INSERT INTO a VALUES (1000, 1000, NULL)`)
	s = openSource(t, url, settings, first[19].Position)
	var filled bool
	for m.rows["a"][1000] == 0 {
		r := readN(t, s, 1)[0]
		if !delivered[string(r.Position)] && r.Key.(sdk.StructuredData)["id"] != int64(1000) {
			t.Fatalf("%s of row %v at %s: not delivered before the restart, or under another position", r.Operation, r.Key, r.Position)
		}
		if r.Operation == sdk.OperationUpdate && r.Key.(sdk.StructuredData)["id"] == int64(30) {
			filled = r.Payload.After.(sdk.StructuredData)["big"] == strings.Repeat("toasted ", 2000)
		}
		m.apply(r)
	}
	if !filled {
		t.Error("the update of row 30, its first change after the resume point, lacks its unchanged TOASTed value")
	}
	nothingMore(t, s)
	m.check(conn, "a")
}

// A snapshot started over (Conduit gave no position while the slot
// exists: the pipeline is new to it) reads every row again from a new
// slot, the rows changed meanwhile as they are now, and records the new
// slot's read in the state row.
func TestSourceStartedOver(t *testing.T) {
	url, conn := sourceDB(t, `
		CREATE TABLE a (id int PRIMARY KEY, n bigint);
		INSERT INTO a SELECT i, 0 FROM generate_series(1, 20) i;
	`)
	settings := map[string]string{"tables": "a", "snapshot.fetchSize": "7"}
	slot := url[strings.LastIndex(url, "/")+1 : strings.Index(url, "?")]
	state := func() string {
		return pgtest.Rows(t, conn, `SELECT tables->'"public"."a"'->>'seen' FROM connkit_snapshots WHERE slot = '`+slot+`'`)[0]
	}
	s := openSource(t, url, settings, nil)
	first := readN(t, s, 20)
	firstSeen := state()
	if err := s.Teardown(t.Context()); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, conn, `UPDATE a SET n = 1 WHERE id = 7`)

	s = openSource(t, url, settings, nil)
	again := readN(t, s, 20)
	nothingMore(t, s)
	for i, r := range again {
		n := r.Payload.After.(sdk.StructuredData)["n"]
		if r.Operation != sdk.OperationSnapshot || !reflect.DeepEqual(r.Key, first[i].Key) || n != map[bool]int64{true: 1, false: 0}[i == 6] {
			t.Errorf("record %d: %s of %v with n=%v, want the snapshot of %v", i, r.Operation, r.Key, n, first[i].Key)
		}
	}
	if state() == firstSeen {
		t.Errorf("the snapshot started over is read against the first one's transactions %s", firstSeen)
	}
}

// A role that may not write the state table gets an error that names the
// parameter, what the table is for and what to grant: the snapshot
// records there where its read stands.
func TestSourceNeedsItsStateTable(t *testing.T) {
	url, conn := sourceDB(t, `
		CREATE TABLE a (id int PRIMARY KEY, n bigint);
		CREATE PUBLICATION p FOR TABLE a;
	`)
	role := "r_" + url[strings.LastIndex(url, "/")+1:strings.Index(url, "?")]
	pgtest.Exec(t, conn, `CREATE ROLE `+role+` LOGIN REPLICATION; GRANT SELECT ON a TO `+role)
	t.Cleanup(func() {
		conn.Exec(context.Background(), `DROP OWNED BY `+role+`; DROP ROLE `+role)
	})
	url = strings.Replace(url, "postgres@", role+"@", 1)
	s, err := tryOpenSource(t, url, map[string]string{"tables": "a", "publication.name": "p"}, nil)
	s.Teardown(t.Context())
	for _, want := range []string{`parameter "snapshot.stateTable": may not write table "connkit_snapshots"`, "grant the role CREATE", "CREATE TABLE", "snapshot.mode to never"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got error %v, want one containing %q", err, want)
		}
	}
	// Changes alone need no state.
	openSource(t, url, map[string]string{"tables": "a", "publication.name": "p", "snapshot.mode": "never"}, nil)
}
