package source

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/connkit/connkit/sdk"
)

// BenchmarkSourceSnapshot reads a snapshot of 4-column rows in process,
// with one chunk read at a time and with two.
func BenchmarkSourceSnapshot(b *testing.B) {
	const rows = 200000
	url, conn := server.Database(b, fmt.Sprintf(`CREATE TABLE items (id bigint PRIMARY KEY, a text, b text, n int);
		INSERT INTO items SELECT i, 'row-' || i, 'a text column of moderate length', i %% 1000 FROM generate_series(1, %d) i`, rows))
	if _, err := conn.Exec(b.Context(), `VACUUM ANALYZE items`); err != nil { // as a table read long after it was written
		b.Fatal(err)
	}
	for _, readers := range []string{"1", "2"} {
		b.Run("readers="+readers, func(b *testing.B) {
			b.ReportAllocs()
			var elapsed time.Duration
			for i := range b.N {
				elapsed += benchRead(b, map[string]string{"url": url, "tables": "items", "slot.name": fmt.Sprintf("bench_%d", i), "snapshot.parallelism": readers}, rows, func() {})
			}
			b.ReportMetric(float64(rows*b.N)/elapsed.Seconds(), "records/s")
		})
	}
}

// BenchmarkSourceChanges streams inserts of 4-column rows in process.
func BenchmarkSourceChanges(b *testing.B) {
	const rows = 100000
	url, conn := server.Database(b, `CREATE TABLE items (id bigint PRIMARY KEY, a text, b text, n int)`)
	b.ReportAllocs()
	var elapsed time.Duration
	for i := range b.N {
		elapsed += benchRead(b, map[string]string{"url": url, "tables": "items", "snapshot.mode": "never", "slot.name": fmt.Sprintf("bench_%d", i)}, rows, func() {
			if _, err := conn.Exec(b.Context(), fmt.Sprintf(`TRUNCATE items; INSERT INTO items SELECT i, 'row-' || i, 'a text column of moderate length', i %% 1000 FROM generate_series(1, %d) i`, rows)); err != nil {
				b.Fatal(err)
			}
		})
	}
	b.ReportMetric(float64(rows*b.N)/elapsed.Seconds(), "records/s")
}

// benchRead opens a source with settings and runs write, then reads rows
// records in batches of 1000 and returns how long the reading took. It
// tears the source down and drops its slot before it returns.
func benchRead(b *testing.B, settings map[string]string, rows int, write func()) time.Duration {
	src, err := sdk.NewSource(New).New(settings)
	if err != nil {
		b.Fatal(err)
	}
	if err := src.Open(b.Context(), nil); err != nil {
		b.Fatal(err)
	}
	write()
	start := time.Now()
	s := src.(*Source)
	for n := 0; n < rows; {
		recs, err := s.ReadBatch(b.Context(), 1000)
		if err != nil {
			b.Fatal(err)
		}
		n += len(recs)
	}
	elapsed := time.Since(start)
	src.Teardown(context.Background())
	if err := s.OnDeleted(context.Background()); err != nil {
		b.Fatal(err)
	}
	return elapsed
}
