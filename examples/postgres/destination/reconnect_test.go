package destination

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// A statement whose connection the server ends mid-batch (as at a
// shutdown) is written again by the same Write: with reconnect.timeout
// set, the Write returns every record written once, plain inserts
// included.
func TestTerminatedMidBatchWrittenAgain(t *testing.T) {
	is := is.New(t)
	conn, d := setup(t, killedAtSecond, map[string]string{"table": "second"})
	var records []sdk.Record
	for i := range 100 {
		records = append(records, rec(fmt.Sprint(i), sdk.OperationCreate, nil, sdk.StructuredData{"id": i}))
	}
	n, err := d.Write(t.Context(), records)
	is.NoErr(err)
	is.Equal(n, 100)
	is.Equal(pgtest.Rows(t, conn, `SELECT count(*), count(DISTINCT id) FROM second`), []string{"100|100"})
}

// TestDestinationReconnects crashes the server three times while Writes of
// 50 records go one after another into a keyless table, exactly once: no
// Write returns an error, and every record is there once.
func TestDestinationReconnects(t *testing.T) {
	is := is.New(t)
	t.Setenv(pconnector.EnvConduitConnectorID, "pipeline:destination")
	srv := pgtest.StartFor(t, "synchronous_commit=on")
	url, conn := srv.Database(t, `CREATE TABLE items (id int, pos text)`)
	conn.Close(t.Context())
	d, err := sdk.NewDestination(New).New(map[string]string{"url": url, "table": "items", "exactlyOnce.enabled": "true"})
	is.NoErr(err)
	is.NoErr(d.Open(t.Context()))
	defer d.Teardown(context.Background())

	crashed := make(chan error, 1)
	go func() { crashed <- srv.CrashTimes(3) }()
	written := 0
	for done := false; !done; {
		select {
		case err := <-crashed:
			is.NoErr(err)
			done = true
		default:
		}
		var recs []sdk.Record
		for i := range 50 {
			id := written + i
			recs = append(recs, sdk.Record{Position: sdk.Position(fmt.Sprint(id)), Operation: sdk.OperationCreate, Payload: sdk.Change{After: sdk.StructuredData{"id": id}}})
		}
		n, err := d.Write(t.Context(), recs)
		if err != nil {
			t.Fatalf("after %d records: %v", written+n, err)
		}
		is.Equal(n, len(recs))
		written += n
		time.Sleep(10 * time.Millisecond)
	}
	check, err := pgx.Connect(t.Context(), url)
	is.NoErr(err)
	defer check.Close(context.Background())
	var rows, distinct int
	is.NoErr(check.QueryRow(t.Context(), `SELECT count(*), count(DISTINCT id) FROM items`).Scan(&rows, &distinct))
	t.Logf("%d records written, %d rows, %d distinct", written, rows, distinct)
	is.Equal(distinct, written)
	is.Equal(rows, written)
}
