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
	s := src.(*Source)

	ins := pgtest.InsertAcrossCrashes(t, url, `INSERT INTO items SELECT i FROM generate_series($1::int, $1::int + 9) i`)
	crashed := make(chan error, 1)
	go func() { crashed <- srv.CrashTimes(3) }()

	seen := map[int]int{}
	var last sdk.Position
	var lastLSN pglogrepl.LSN
	type delivered struct {
		at  time.Time
		pos sdk.Position
	}
	var unacked []delivered
	read := func(d time.Duration) {
		rctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		for {
			recs, err := s.ReadBatch(rctx, 1000)
			if err != nil && rctx.Err() != nil {
				return
			}
			if err != nil {
				t.Fatalf("after %d records: %v", len(seen), err)
			}
			for _, r := range recs {
				id := int(r.Payload.After.(sdk.StructuredData)["id"].(int64))
				seen[id]++
				lsn, err := positionLSN(r.Position)
				is.NoErr(err)
				if lsn < lastLSN {
					t.Fatalf("record at %s after one at %s", r.Position, last)
				}
				last, lastLSN = r.Position, lsn
				unacked = append(unacked, delivered{time.Now(), r.Position})
			}
			for len(unacked) > 0 && time.Since(unacked[0].at) > 250*time.Millisecond {
				is.NoErr(s.Ack(t.Context(), unacked[0].pos))
				unacked = unacked[1:]
			}
		}
	}
	for {
		read(100 * time.Millisecond)
		select {
		case err := <-crashed:
			is.NoErr(err)
		default:
			continue
		}
		break
	}
	read(2 * time.Second) // rows inserted after the last crash
	ins.Stop()

	check, err := pgx.Connect(t.Context(), url)
	is.NoErr(err)
	defer check.Close(context.Background())
	var want int
	is.NoErr(check.QueryRow(t.Context(), `SELECT count(*) FROM items`).Scan(&want))
	deadline := time.Now().Add(time.Minute)
	for len(seen) < want && time.Now().Before(deadline) {
		read(200 * time.Millisecond)
	}
	read(200 * time.Millisecond)
	for _, u := range unacked {
		is.NoErr(s.Ack(t.Context(), u.pos))
	}
	var missing, twice int
	rows, err := check.Query(t.Context(), `SELECT id FROM items`)
	is.NoErr(err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	is.NoErr(err)
	for _, id := range ids {
		if seen[int(id)] == 0 {
			missing++
		}
	}
	for _, n := range seen {
		if n > 1 {
			twice++
		}
	}
	t.Logf("%d rows committed, %d records read, %d missing, %d twice", want, len(seen), missing, twice)
	is.Equal(missing, 0)
	is.Equal(twice, 0)
	is.Equal(len(seen), want) // nothing that was not committed
	// Acks reach the slot on the new connection, and the lag goroutine
	// measures on one of its own.
	waitConfirmed(t, check, lastLSN.String())
	metricstest.Eventually(t, address, "the last change's LSN", func(v float64) bool { return v >= float64(lastLSN) }, "connkit_postgres_slot_confirmed_lsn")
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
