package source

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

// rowsOf renders the payloads (after, or before for a delete) of recs as
// a:b, sorted, so that duplicates show.
func rowsOf(recs []sdk.Record, before bool) []string {
	var out []string
	for _, r := range recs {
		d := r.Payload.After
		if before {
			d = r.Payload.Before
		}
		sd, _ := d.(sdk.StructuredData)
		out = append(out, fmt.Sprint(sd["a"], ":", sd["b"]))
	}
	slices.Sort(out)
	return out
}

// keylessRows is the table's 1000 rows, each of its 500 twice, as rowsOf
// renders them.
func keylessRows() []string {
	var out []string
	for i := 1; i <= 500; i++ {
		out = append(out, fmt.Sprint(i, ":r", i), fmt.Sprint(i, ":r", i))
	}
	slices.Sort(out)
	return out
}

const keylessDDL = `
	CREATE TABLE logs (a int, b text);
	ALTER TABLE logs REPLICA IDENTITY FULL;
	INSERT INTO logs SELECT i, 'r' || i FROM generate_series(1, 500) i;
	INSERT INTO logs SELECT i, 'r' || i FROM generate_series(1, 500) i;`

func TestSourceKeylessTable(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, keylessDDL)
	s := openSource(t, url, map[string]string{"tables": "logs", "snapshot.fetchSize": "100"}, nil)
	recs := readN(t, s, 1000)
	is.Equal(rowsOf(recs, false), keylessRows()) // exact duplicates all arrive
	positions := map[string]bool{}
	for _, r := range recs {
		is.Equal(r.Operation, sdk.OperationSnapshot)
		is.Equal(r.Key, nil)
		is.Equal(r.Metadata[sdk.MetadataCollection], "logs")
		is.True(strings.Contains(string(r.Position), `"ctid":"(`))
		positions[string(r.Position)] = true
	}
	is.Equal(len(positions), 1000)

	pgtest.Exec(t, conn, `INSERT INTO logs VALUES (7, 'r7')`)
	pgtest.Exec(t, conn, `UPDATE logs SET b = 'two' WHERE a = 2`)
	pgtest.Exec(t, conn, `DELETE FROM logs WHERE a = 7`)
	changes := readN(t, s, 6)
	nothingMore(t, s)
	ops := make([]string, len(changes))
	for i, r := range changes {
		ops[i] = r.Operation.String()
		is.Equal(r.Key, nil)
	}
	is.Equal(ops, []string{"create", "update", "update", "delete", "delete", "delete"})
	is.Equal(rowsOf(changes[1:3], true), []string{"2:r2", "2:r2"}) // the whole old row
	is.Equal(rowsOf(changes[1:3], false), []string{"2:two", "2:two"})
	is.Equal(rowsOf(changes[3:], true), []string{"7:r7", "7:r7", "7:r7"})
	is.Equal(changes[3].Payload.After, nil)
}

// A keyless table's snapshot resumed after a restart reads on after the
// last row acknowledged, under the positions the rows had.
func TestSourceKeylessResumedSnapshot(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, keylessDDL)
	settings := map[string]string{"tables": "logs", "snapshot.fetchSize": "100"}
	s := openSource(t, url, settings, nil)
	first := readN(t, s, 1000)
	ackAll(t, s, first[:333])
	is.NoErr(s.Teardown(t.Context()))

	pgtest.Exec(t, conn, `UPDATE logs SET b = 'changed' WHERE a = 500`) // after the resume point: comes as changes alone
	s = openSource(t, url, settings, first[332].Position)
	rest := readN(t, s, 667) // 665 rows unchanged, 2 updates
	var snap, changes []sdk.Record
	for _, r := range rest {
		if r.Operation == sdk.OperationSnapshot {
			snap = append(snap, r)
		} else {
			changes = append(changes, r)
		}
	}
	nothingMore(t, s)
	is.Equal(len(changes), 2)
	is.Equal(rowsOf(changes, true), []string{"500:r500", "500:r500"})
	var want []sdk.Record
	for _, r := range first[333:] {
		if r.Payload.After.(sdk.StructuredData)["a"] != int64(500) {
			want = append(want, r)
		}
	}
	is.Equal(len(snap), len(want))
	for i := range snap {
		is.Equal(string(snap[i].Position), string(want[i].Position))
	}
}

// A keyless table's copy restarted before its last chunk was read goes on
// in chunks of the size it had, every row once.
func TestSourceKeylessCopyRestarted(t *testing.T) {
	is := is.New(t)
	url, _ := sourceDB(t, `
		CREATE TABLE logs (a int, b text);
		ALTER TABLE logs REPLICA IDENTITY FULL;
		INSERT INTO logs SELECT i, 'r' || i FROM generate_series(1, 3000) i;
		ANALYZE logs;`)
	settings := map[string]string{"tables": "logs", "snapshot.fetchSize": "100"}
	s := openSource(t, url, settings, nil)
	first := readN(t, s, 250)
	ackAll(t, s, first[:200])
	is.NoErr(s.Teardown(t.Context()))

	s = openSource(t, url, settings, first[199].Position)
	rest := readN(t, s, 2800)
	nothingMore(t, s)
	var want []string
	for i := 1; i <= 3000; i++ {
		want = append(want, fmt.Sprint(i, ":r", i))
	}
	slices.Sort(want)
	is.Equal(rowsOf(append(first[:200], rest...), false), want) // every row once
	chunks := map[string]int{}                                  // each chunk's rows share its high watermark's LSN
	for _, r := range rest {
		p, err := parsePosition(r.Position)
		is.NoErr(err)
		chunks[p.LSN]++
	}
	for _, n := range chunks {
		is.True(n <= 200) // fetchSize 100, by the planner's rows per block
	}
}

func TestSourceReplicaIdentityUsingIndex(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `
		CREATE TABLE codes (code text NOT NULL, n int);
		CREATE UNIQUE INDEX codes_code ON codes (code);
		ALTER TABLE codes REPLICA IDENTITY USING INDEX codes_code;
		INSERT INTO codes VALUES ('b', 2), ('a', 1);`)
	s := openSource(t, url, map[string]string{"tables": "codes"}, nil)
	recs := readN(t, s, 2)
	is.Equal(recs[0].Key, sdk.StructuredData{"code": "a"}) // in the index's order
	is.Equal(recs[1].Key, sdk.StructuredData{"code": "b"})
	pgtest.Exec(t, conn, `DELETE FROM codes WHERE code = 'b'`)
	del := readN(t, s, 1)[0]
	is.Equal(del.Operation, sdk.OperationDelete)
	is.Equal(del.Key, sdk.StructuredData{"code": "b"})
}

// A table whose replica identity cannot carry updates and deletes is
// refused, naming the statement to run, before the publication is
// created or changed.
func TestSourceRefusesTablesWithoutReplicaIdentity(t *testing.T) {
	url, conn := sourceDB(t, `
		CREATE TABLE ok (id int PRIMARY KEY);
		CREATE TABLE plain (v int);
		CREATE TABLE nothing (id int PRIMARY KEY);
		ALTER TABLE nothing REPLICA IDENTITY NOTHING;
		CREATE PUBLICATION connkit FOR TABLE ok;`)
	for _, tt := range []struct{ tables, want string }{
		{"ok,plain", "table public.plain has no primary key and REPLICA IDENTITY DEFAULT"},
		{"nothing,ok", "table public.nothing has REPLICA IDENTITY NOTHING"},
	} {
		t.Run(tt.tables, func(t *testing.T) {
			_, err := tryOpenSource(t, url, map[string]string{"tables": tt.tables}, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "REPLICA IDENTITY FULL") {
				t.Fatalf("got error %v, want one containing %q and the statement to run", err, tt.want)
			}
		})
	}
	is.New(t).Equal(pgtest.Rows(t, conn, `SELECT tablename FROM pg_publication_tables WHERE pubname = 'connkit'`), []string{"ok"})
}

// An update of a keyless row that leaves a TOASTed value unchanged
// carries it, taken from the old row.
func TestSourceKeylessUnchangedToast(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, `
		CREATE TABLE docs (a int, body text);
		ALTER TABLE docs REPLICA IDENTITY FULL;
		ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL;
		INSERT INTO docs VALUES (1, repeat('x', 10000));`)
	s := openSource(t, url, map[string]string{"tables": "docs"}, nil)
	readN(t, s, 1)
	pgtest.Exec(t, conn, `UPDATE docs SET a = 2`)
	up := readN(t, s, 1)[0]
	is.Equal(up.Payload.After, sdk.StructuredData{"a": int64(2), "body": strings.Repeat("x", 10000)})
	is.Equal(up.Payload.Before, sdk.StructuredData{"a": int64(1), "body": strings.Repeat("x", 10000)})
}

// A keyless table's range is read by a TID range scan, which reads its
// blocks alone.
func TestKeylessRangeIsATidRangeScan(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDB(t, keylessDDL)
	s := openSource(t, url, map[string]string{"tables": "logs"}, nil)
	sql, args := s.catalog.tables[0].rangeQuery(span{after: []string{"(1,5)"}, upto: []string{tid(3)}})
	plan := pgtest.Rows(t, conn, "EXPLAIN "+strings.NewReplacer("$1", "'"+string(args[0])+"'", "$2", "'"+string(args[1])+"'").Replace(sql))
	is.True(strings.Contains(strings.Join(plan, "\n"), "Tid Range Scan"))
}

// A keyless table's snapshot cannot resume once the table has a primary
// key: the error says so, and what to do.
func TestSourceKeylessResumeAfterKeyAdded(t *testing.T) {
	url, conn := sourceDB(t, `
		CREATE TABLE t (a int, b text);
		ALTER TABLE t REPLICA IDENTITY FULL;
		INSERT INTO t SELECT i, 'r' || i FROM generate_series(1, 10) i;`)
	s := openSource(t, url, map[string]string{"tables": "t"}, nil)
	recs := readN(t, s, 10)
	ackAll(t, s, recs[:3])
	is.New(t).NoErr(s.Teardown(t.Context()))
	pgtest.Exec(t, conn, `ALTER TABLE t ADD PRIMARY KEY (a)`)
	_, err := tryOpenSource(t, url, map[string]string{"tables": "t"}, recs[2].Position)
	if err == nil || !strings.Contains(err.Error(), "read table public.t by its rows' ctid, but the table is now keyed by a") || !strings.Contains(err.Error(), "reset the pipeline's position") {
		t.Fatalf("got error %v, want one saying the table is keyed now and what to do", err)
	}
}
