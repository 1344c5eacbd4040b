package source

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
)

// keylessModel applies a source's records to a model of a keyless table
// of (a int, b text) as the postgres destination applies records without
// a key: a row is a multiset element; an update changes one row equal to
// its old row or, if there is none, inserts its new one; a delete deletes
// one such row, if there is one.
type keylessModel struct {
	t         *testing.T
	rows      map[string]int
	positions map[string]bool
}

func newKeylessModel(t *testing.T) *keylessModel {
	return &keylessModel{t: t, rows: map[string]int{}, positions: map[string]bool{}}
}

// keylessRow renders a payload's row.
func keylessRow(d sdk.Data) string {
	sd, _ := d.(sdk.StructuredData)
	return fmt.Sprint(sd["a"], ":", sd["b"])
}

func (m *keylessModel) apply(recs ...sdk.Record) {
	m.t.Helper()
	for _, r := range recs {
		if m.positions[string(r.Position)] {
			m.t.Fatalf("position %s twice", r.Position)
		}
		m.positions[string(r.Position)] = true
		if r.Metadata[sdk.MetadataCollection] != "logs" {
			continue
		}
		switch r.Operation {
		case sdk.OperationSnapshot, sdk.OperationCreate:
			m.rows[keylessRow(r.Payload.After)]++
		case sdk.OperationUpdate:
			m.remove(keylessRow(r.Payload.Before))
			m.rows[keylessRow(r.Payload.After)]++
		case sdk.OperationDelete:
			m.remove(keylessRow(r.Payload.Before))
		}
	}
}

func (m *keylessModel) remove(row string) {
	if m.rows[row]--; m.rows[row] <= 0 {
		delete(m.rows, row)
	}
}

// table is the multiset of the table's rows.
func keylessTable(t *testing.T, conn *pgx.Conn, table string) map[string]int {
	t.Helper()
	rows := map[string]int{}
	for _, r := range pgtest.Rows(t, conn, `SELECT a || ':' || b FROM `+table) {
		rows[r]++
	}
	return rows
}

// workload updates, deletes and inserts rows of a table until stopped: the
// rows whose key (a unique column) is from 1 to n, ahead of, in and
// behind the chunks, and new rows keyed above 1,000,000, with a seeded
// random workload. Its statements take the key as $1; it ends with end,
// which marks the last write.
type workload struct {
	update, delete, insert, end string
}

// keylessWriter is a workload on logs (a int, b text), which ends with the
// row (0, end).
var keylessWriter = workload{
	update: `UPDATE logs SET b = b || 'u' WHERE a = $1`,
	delete: `DELETE FROM logs WHERE a = $1`,
	insert: `INSERT INTO logs VALUES ($1, 'new')`,
	end:    `INSERT INTO logs VALUES (0, 'end')`,
}

// start starts writing, and returns a function that stops it and returns
// its error.
func (w workload) start(t *testing.T, url string, n int) (stop func() error) {
	t.Helper()
	seed := time.Now().UnixNano()
	t.Logf("writer's seed: %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	stopped, ended := make(chan struct{}), make(chan error, 1)
	go func() {
		defer conn.Close(context.Background())
		ctx := context.Background()
		for i := 1; ; i++ {
			select {
			case <-stopped:
				_, err := conn.Exec(ctx, w.end)
				ended <- err
				return
			default:
			}
			k, sql := 1+rng.IntN(n), w.update
			switch rng.IntN(3) {
			case 0:
				sql = w.delete
			case 1:
				k, sql = 1_000_000+i, w.insert
			}
			if _, err := conn.Exec(ctx, sql, k); err != nil {
				ended <- err
				return
			}
		}
	}()
	var once sync.Once
	var werr error
	stop = func() error {
		once.Do(func() {
			close(stopped)
			werr = <-ended
		})
		return werr
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// A keyless table copied while rows of chunks not yet read, being read
// and already read are updated, deleted and inserted arrives whole: each
// change in a chunk's window takes its old row out of the chunk, as a
// multiset, and no row is there twice or missing; also with two chunks
// read at once. Rows that are exact duplicates, never changed, all arrive.
func TestSourceKeylessCopyWhileWriting(t *testing.T) {
	for _, parallelism := range []int{1, 2} {
		t.Run(strconv.Itoa(parallelism), func(t *testing.T) {
			const n = 20000
			url, conn := sourceDB(t, fmt.Sprintf(`
				CREATE TABLE logs (a int, b text);
				ALTER TABLE logs REPLICA IDENTITY FULL;
				INSERT INTO logs SELECT i, 'r' || i FROM generate_series(1, %d) i;
				INSERT INTO logs SELECT -i, 'twice' FROM generate_series(1, 100) i, generate_series(1, 2);`, n))
			s := openSource(t, url, map[string]string{"tables": "logs", "snapshot.fetchSize": "500", "snapshot.parallelism": strconv.Itoa(parallelism)}, nil)
			stop := keylessWriter.start(t, url, n)
			m := newKeylessModel(t)
			readKeylessUntilCopied(t, s, m, stop, conn)
		})
	}
}

// readKeylessUntilCopied reads records into m for a second, stops the
// writer, and reads until the model equals logs after the writer's end
// row (at most two minutes), then checks nothing more comes.
func readKeylessUntilCopied(t *testing.T, s *Source, m *keylessModel, stop func() error, conn *pgx.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	stopAt := time.Now().Add(time.Second)
	var want map[string]int
	for want == nil || !maps.Equal(m.rows, want) {
		if want == nil && time.Now().After(stopAt) && m.rows["0:end"] == 0 {
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			stopAt = time.Now().Add(time.Hour)
		}
		recs, err := s.ReadBatch(ctx, 1000)
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the copy differs from the table: %s", multisetDiff(m.rows, want))
		}
		if err != nil {
			t.Fatal(err)
		}
		m.apply(recs...)
		if want == nil && m.rows["0:end"] > 0 {
			want = keylessTable(t, conn, "logs")
		}
	}
	nothingMore(t, s)
}

// multisetDiff says how two multisets of rows differ, a few rows at most.
func multisetDiff(got, want map[string]int) string {
	var diffs []string
	for _, row := range slices.Sorted(maps.Keys(want)) {
		if got[row] != want[row] {
			diffs = append(diffs, fmt.Sprintf("%s: %d, want %d", row, got[row], want[row]))
		}
	}
	for _, row := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[row]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %d, want none", row, got[row]))
		}
	}
	return fmt.Sprintf("%d rows differ, first %v", len(diffs), diffs[:min(10, len(diffs))])
}

// A keyless table added to a streaming source's tables is read in chunks
// while its changes stream, as a table with a key is.
func TestSourceKeylessAddedTable(t *testing.T) {
	url, conn := sourceDB(t, `CREATE TABLE a (id bigint PRIMARY KEY, n bigint NOT NULL);
		INSERT INTO a SELECT i, i FROM generate_series(1, 100) i;
		CREATE TABLE logs (a int, b text);
		ALTER TABLE logs REPLICA IDENTITY FULL;
		INSERT INTO logs SELECT i, 'r' || i FROM generate_series(1, 3000) i;`)
	from := firstRun(t, url, conn, newCopyModel(t))
	s := openSource(t, url, map[string]string{"tables": "a,logs", "snapshot.fetchSize": "200"}, from)
	stop := keylessWriter.start(t, url, 3000)
	m := newKeylessModel(t)
	readKeylessUntilCopied(t, s, m, stop, conn)
}
