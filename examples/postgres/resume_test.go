package postgres

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// replay applies a source's records to a model of its tables the way a
// keyless destination in the exactly-once mode would (a record whose
// position it has is skipped), and fails the test on a record that such a
// destination would get wrong: a row created, read or moved to a key that
// it already holds (a row twice), a change of a row it does not hold (a
// row whose first delivery is missing). A delete of a row it does not
// hold is a no-op: the source cannot know which records in flight before
// a restart reached the destination.
type replay struct {
	t         *testing.T
	rows      map[string]map[int64]int64 // collection, id: n
	positions map[string]bool
}

func newReplay(t *testing.T) *replay {
	return &replay{t: t, rows: map[string]map[int64]int64{}, positions: map[string]bool{}}
}

func (m *replay) apply(recs ...sdk.Record) {
	m.t.Helper()
	for _, r := range recs {
		if m.positions[string(r.Position)] {
			continue
		}
		m.positions[string(r.Position)] = true
		coll := r.Metadata["opencdc.collection"]
		if m.rows[coll] == nil {
			m.rows[coll] = map[int64]int64{}
		}
		rows := m.rows[coll]
		id := r.Key.(sdk.StructuredData)["id"].(int64)
		_, held := rows[id]
		switch r.Operation {
		case sdk.OperationSnapshot, sdk.OperationCreate:
			n := r.Payload.After.(sdk.StructuredData)["n"].(int64)
			// A row read again under a new position is a version of it
			// changed while it was in flight: it replaces the one held, as
			// the update a run without a restart delivers. The same
			// version twice is a row twice.
			if held && (r.Operation != sdk.OperationSnapshot || rows[id] == n) {
				m.t.Fatalf("%s %s %d at %s: the row is already there", r.Operation, coll, id, r.Position)
			}
			rows[id] = n
		case sdk.OperationUpdate:
			old := id
			if before, ok := r.Payload.Before.(sdk.StructuredData); ok {
				old = before["id"].(int64)
			}
			if old == id && !held {
				m.t.Fatalf("update %s %d at %s: the row is not there", coll, id, r.Position)
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
func (m *replay) check(conn *pgx.Conn, tables ...string) {
	m.t.Helper()
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
		if got := m.rows[table]; !maps.Equal(got, want) {
			for id, n := range want {
				if g, ok := got[id]; !ok || g != n {
					m.t.Errorf("%s %d: table has n=%d, replay has %d (present: %v)", table, id, n, g, ok)
				}
			}
			for id := range got {
				if _, ok := want[id]; !ok {
					m.t.Errorf("%s %d: in the replay, not in the table", table, id)
				}
			}
			m.t.FailNow()
		}
	}
}

// A snapshot resumed from a position in its middle, after writes on both
// sides of the resume key and in a later table, and with writes going on
// while it resumes, delivers each row once: replayed as a keyless
// destination would, the stream holds the tables' rows, none twice. A
// restart among the changes that the fresh snapshot saw drops the same
// ones.
func TestSourceResumedSnapshotExactlyOnce(t *testing.T) {
	url, conn := sourceDB(t, `
		CREATE TABLE a (id int PRIMARY KEY, n bigint);
		CREATE TABLE b (id int PRIMARY KEY, n bigint);
		CREATE TABLE z (id int PRIMARY KEY, n bigint);
		INSERT INTO a SELECT i, 0 FROM generate_series(1, 100) i;
		INSERT INTO b SELECT i, 0 FROM generate_series(1, 50) i;
	`)
	settings := map[string]string{"tables": "*", "snapshot.fetchSize": "7"}
	m := newReplay(t)

	// The first run delivers a's rows up to 45, and stops with 40
	// acknowledged: the destination holds 41 to 45 too.
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

	// Writes before the resume (44, in flight, changes: its new version
	// comes under a new position; 43, in flight, is deleted): inserts, updates and deletes
	// on both sides of key 40 (10 < 40 < 100 also as text), keys moved across it
	// both ways and on either side, in a later table, in one transaction
	// and in several.
	exec(t, conn, `BEGIN; DELETE FROM a WHERE id = 50; INSERT INTO a VALUES (-1, 1), (1000, 1); COMMIT`)
	exec(t, conn, `BEGIN;
		UPDATE a SET n = 2 WHERE id IN (10, 44, 60, 100);
		UPDATE b SET n = 2 WHERE id = 10;
		INSERT INTO b VALUES (1000, 2);
		DELETE FROM a WHERE id IN (15, 43, 90); -- 43: in flight
		DELETE FROM b WHERE id = 20;
		COMMIT`)
	exec(t, conn, `UPDATE a SET id = 2000 WHERE id = 20`)       // delivered -> to be read
	exec(t, conn, `UPDATE a SET id = -70 WHERE id = 70`)        // to be read -> delivered
	exec(t, conn, `UPDATE a SET id = -30 WHERE id = 30`)        // delivered -> delivered
	exec(t, conn, `UPDATE a SET id = 3000 WHERE id = 80`)       // to be read -> to be read
	exec(t, conn, `UPDATE a SET id = 0, n = 3 WHERE id = 1000`) // moved twice
	exec(t, conn, `UPDATE a SET id = 1000 WHERE id = 0`)
	exec(t, conn, `INSERT INTO a VALUES (50, 5)`) // deleted in a transaction before the one the last run resumes in

	// Writes during the resume.
	writer, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait() // before the writer's connection closes, also when the test fails
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
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

	// The resumed run: the rest of the snapshot, then changes, stopped
	// after the first change of the second transaction; the next run
	// resumes after it.
	s = openSource(t, url, settings, resumeAt)
	var read []sdk.Record
	var firstLSN pglogrepl.LSN
	for {
		r := readN(t, s, 1)[0]
		m.apply(r)
		read = append(read, r)
		if r.Operation == sdk.OperationSnapshot {
			continue
		}
		if !bytes.Contains(r.Position, []byte(`"resumed"`)) {
			t.Fatalf("change %s, written before the resume, has no resumed snapshot in its position", r.Position)
		}
		lsn, err := positionLSN(r.Position)
		if err != nil {
			t.Fatal(err)
		}
		if firstLSN == 0 {
			firstLSN = lsn
		} else if lsn != firstLSN {
			break
		}
	}
	change := read[len(read)-1]
	ackAll(t, s, read)
	if err := s.Teardown(t.Context()); err != nil {
		t.Fatal(err)
	}

	// Once the writes are done, a row in z marks the end of the changes.
	wg.Wait()
	if werr != nil {
		t.Fatal(werr)
	}
	exec(t, conn, `INSERT INTO z VALUES (1, 1)`)
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
