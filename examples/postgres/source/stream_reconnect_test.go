package source

import (
	"context"
	"strings"
	"testing"
	"time"

	connmetrics "github.com/connkit/connkit/internal/metrics"
	"github.com/connkit/connkit/internal/metrics/metricstest"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// TestSourceReconnects crashes the server three times while the source
// streams about 1,000 rows a second, with Conduit's acks a quarter of a
// second behind: the source reconnects by itself, no error reaches Read,
// every row committed comes once (none lost, none twice, in commit order),
// and acks go on reaching the slot, as does the lag measurement.
func TestSourceReconnects(t *testing.T) {
	is := is.New(t)
	srv := pgtest.StartFor(t, "synchronous_commit=on")
	url, conn := srv.Database(t, `CREATE TABLE items (id int PRIMARY KEY)`)
	conn.Close(t.Context())

	ctx, address := metricstest.Serve(t, t.Context(), connmetrics.Labels{ConnectorID: "p:source", Plugin: "postgres", Version: "v0.1.0", Role: "source"})
	raw := map[string]string{"url": url, "tables": "items", "snapshot.mode": "never"}
	src, err := sdk.NewSource(New).New(raw)
	is.NoErr(err)
	t.Cleanup(func() { src.Teardown(context.Background()) })
	is.NoErr(src.Open(ctx, nil))
	r := &lateReader{t: t, s: src.(*Source), seen: map[int]int{}}

	ins := pgtest.InsertAcrossCrashes(t, url, `INSERT INTO items SELECT i FROM generate_series($1::int, $1::int + 9) i`)
	crashed := make(chan error, 1)
	go func() { crashed <- srv.CrashTimes(3) }()
	for {
		r.read(100 * time.Millisecond)
		select {
		case err := <-crashed:
			is.NoErr(err)
		default:
			continue
		}
		break
	}
	r.read(2 * time.Second) // rows inserted after the last crash
	ins.Stop()

	check, err := pgx.Connect(t.Context(), url)
	is.NoErr(err)
	defer check.Close(context.Background())
	var want int
	is.NoErr(check.QueryRow(t.Context(), `SELECT count(*) FROM items`).Scan(&want))
	deadline := time.Now().Add(time.Minute)
	for len(r.seen) < want && time.Now().Before(deadline) {
		r.read(200 * time.Millisecond)
	}
	r.read(200 * time.Millisecond)
	r.ackRest()
	missing, twice := r.missingAndTwice(check)
	t.Logf("%d rows committed, %d records read, %d missing, %d twice", want, len(r.seen), missing, twice)
	is.Equal(missing, 0)
	is.Equal(twice, 0)
	is.Equal(len(r.seen), want) // nothing that was not committed
	// Acks reach the slot on the new connection, and the lag goroutine
	// measures on one of its own.
	waitConfirmed(t, check, r.lastLSN.String())
	metricstest.Eventually(t, address, "the last change's LSN", func(v float64) bool { return v >= float64(r.lastLSN) }, "connkit_postgres_slot_confirmed_lsn")
}

// lateReader reads the changes of items, checking that they come in
// commit order, and acks each a quarter of a second after it came.
type lateReader struct {
	t       *testing.T
	s       *Source
	seen    map[int]int // records read, by id
	last    sdk.Position
	lastLSN pglogrepl.LSN
	unacked []delivered
}

// delivered is a record read and not acked yet.
type delivered struct {
	at  time.Time
	pos sdk.Position
}

// read reads for d.
func (r *lateReader) read(d time.Duration) {
	t := r.t
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	for {
		recs, err := r.s.ReadBatch(ctx, 1000)
		if err != nil && ctx.Err() != nil {
			return
		}
		if err != nil {
			t.Fatalf("after %d records: %v", len(r.seen), err)
		}
		for _, rec := range recs {
			r.seen[int(rec.Payload.After.(sdk.StructuredData)["id"].(int64))]++
			lsn, err := positionLSN(rec.Position)
			if err != nil {
				t.Fatal(err)
			}
			if lsn < r.lastLSN {
				t.Fatalf("record at %s after one at %s", rec.Position, r.last)
			}
			r.last, r.lastLSN = rec.Position, lsn
			r.unacked = append(r.unacked, delivered{time.Now(), rec.Position})
		}
		for len(r.unacked) > 0 && time.Since(r.unacked[0].at) > 250*time.Millisecond {
			r.ack(r.unacked[0].pos)
			r.unacked = r.unacked[1:]
		}
	}
}

func (r *lateReader) ack(pos sdk.Position) {
	if err := r.s.Ack(r.t.Context(), pos); err != nil {
		r.t.Fatal(err)
	}
}

// ackRest acks every record read.
func (r *lateReader) ackRest() {
	for _, u := range r.unacked {
		r.ack(u.pos)
	}
	r.unacked = nil
}

// missingAndTwice counts the rows of items at conn that were not read, and
// the rows read more than once.
func (r *lateReader) missingAndTwice(conn *pgx.Conn) (missing, twice int) {
	rows, err := conn.Query(r.t.Context(), `SELECT id FROM items`)
	if err != nil {
		r.t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		r.t.Fatal(err)
	}
	for _, id := range ids {
		if r.seen[int(id)] == 0 {
			missing++
		}
	}
	for _, n := range r.seen {
		if n > 1 {
			twice++
		}
	}
	return missing, twice
}

// A source streaming changes whose database stays away longer than
// reconnect.timeout fails Read with an error naming the parameter.
func TestSourceReconnectTimeout(t *testing.T) {
	is := is.New(t)
	srv := pgtest.StartFor(t, "synchronous_commit=on")
	url, conn := srv.Database(t, `CREATE TABLE items (id int PRIMARY KEY)`)
	raw, err := sdk.NewSource(New).New(map[string]string{"url": url, "tables": "items", "snapshot.mode": "never", "reconnect.timeout": "1s"})
	is.NoErr(err)
	defer raw.Teardown(context.Background())
	is.NoErr(raw.Open(t.Context(), nil))
	src := raw.(*Source)
	pgtest.Exec(t, conn, `INSERT INTO items VALUES (1)`)
	conn.Close(t.Context())
	recs := readN(t, src, 1)
	is.NoErr(src.Ack(t.Context(), recs[0].Position))
	crashed := make(chan error, 1)
	go func() { crashed <- srv.Crash(4 * time.Second) }()
	ctx, cancel := context.WithTimeout(t.Context(), 3500*time.Millisecond)
	defer cancel()
	_, err = src.ReadBatch(ctx, 10)
	t.Logf("Read: %v", err)
	is.True(err != nil && strings.Contains(err.Error(), `(parameter "reconnect.timeout")`))
	is.NoErr(<-crashed)
}
