package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/host"
	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// database creates a database with one table for generator records and
// returns its URL.
func database(t *testing.T) string {
	t.Helper()
	url, _ := pg.Database(t, `CREATE TABLE generated (seq bigint PRIMARY KEY, name text, n bigint, at timestamptz)`)
	return url
}

func count(t *testing.T, url, query string) int64 {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var n int64
	if err := conn.QueryRow(t.Context(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPostgresOverTheProtocol runs generator → postgres through the plugin
// binaries, with destination batching, and checks the table.
func TestPostgresOverTheProtocol(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	url := database(t)
	src := source(t, host.Options{})
	p := launch(t, "connkit-postgres", host.Options{})
	dst, err := p.Destination()
	is.NoErr(err)
	_, err = src.Configure(ctx, pconnector.SourceConfigureRequest{Config: map[string]string{
		"format.type": "structured", "format.options.name": "string", "format.options.n": "int", "format.options.at": "time",
		"recordCount": "5000",
	}})
	is.NoErr(err)
	_, err = dst.Configure(ctx, pconnector.DestinationConfigureRequest{Config: map[string]string{
		"url": url, "table": "generated", "key": "seq", "sdk.batch.size": "500",
	}})
	is.NoErr(err)
	_, err = src.Open(ctx, pconnector.SourceOpenRequest{})
	is.NoErr(err)
	_, err = dst.Open(ctx, pconnector.DestinationOpenRequest{})
	is.NoErr(err)
	res, err := host.Pipeline{Source: src, Destination: dst, Records: 5000, PerMessage: true}.Run(ctx)
	is.NoErr(err)
	is.Equal(res.Acked, int64(5000))
	// One Write, one statement, per batch of at most 500 records: what has
	// arrived when the destination is free.
	is.True(res.AckBatches >= 10 && res.AckBatches <= 5000)
	is.Equal(count(t, url, `SELECT count(*) FROM generated WHERE name IS NOT NULL AND at IS NOT NULL`), int64(5000))
	is.Equal(count(t, url, `SELECT max(seq) FROM generated`), int64(5000))
}
