package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/connkit/connkit/examples/postgres"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/connkit/connkit/sdk/sdktest"
	"github.com/jackc/pgx/v5"
)

// database starts a PostgreSQL server of this file's own, creates a
// database with the suite's table and returns its URL and a connection.
func database(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	server, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Stop() })
	return server.Database(t, `CREATE TABLE sdktest (id bigint PRIMARY KEY, name text)`)
}

// readBack returns the suite table's rows as records with structured
// payloads.
func readBack(conn *pgx.Conn) func(context.Context) ([]sdk.Record, error) {
	return readBackFrom(conn, "sdktest")
}

// readBackFrom returns the rows of a table with the suite table's columns
// as records with structured payloads.
func readBackFrom(conn *pgx.Conn, table string) func(context.Context) ([]sdk.Record, error) {
	return func(ctx context.Context) ([]sdk.Record, error) {
		rows, err := conn.Query(ctx, `SELECT id, name FROM `+table)
		if err != nil {
			return nil, err
		}
		var out []sdk.Record
		var id int64
		var name string
		_, err = pgx.ForEachRow(rows, []any{&id, &name}, func() error {
			out = append(out, sdk.Record{Payload: sdk.Change{After: sdk.StructuredData{"id": id, "name": name}}})
			return nil
		})
		return out, err
	}
}

func TestConformance(t *testing.T) {
	dbURL, conn := database(t)
	sdktest.Destination(t, sdktest.DestinationSuite{
		Connector: postgres.Connector,
		Config:    map[string]string{"url": dbURL, "table": "sdktest"},
		ReadBack:  readBack(conn),
		Keyed:     true,
		// An upsert by key: a record sent again after a crash replaces
		// its first copy.
		Delivery: sdktest.Idempotent,
		Invalid:  []sdktest.Invalid{{Config: map[string]string{"url": "postgres://host:notaport/db"}, Param: "url"}},
		Plugin:   sdktest.Plugin("connkit-postgres", "./cmd/connkit-postgres"),
	})
}

// In the exactly-once mode no record is written twice, across the crash
// check's kills and resends. An upsert would hide a second write, so a
// trigger logs every row written, and the suite reads the log back.
func TestConformanceExactlyOnce(t *testing.T) {
	t.Setenv("CONDUIT_CONNECTOR_ID", "sdktest:exactly-once") // as Conduit sets it
	server, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Stop() })
	dbURL, conn := server.Database(t, `CREATE TABLE sdktest (id bigint PRIMARY KEY, name text);
		CREATE TABLE written (id bigint, name text);
		CREATE FUNCTION log_write() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO written VALUES (NEW.id, NEW.name); RETURN NULL; END $$;
		CREATE TRIGGER log_write AFTER INSERT OR UPDATE ON sdktest FOR EACH ROW EXECUTE FUNCTION log_write()`)
	sdktest.Destination(t, sdktest.DestinationSuite{
		Connector: postgres.Connector,
		Config:    map[string]string{"url": dbURL, "table": "sdktest", "exactlyOnce.enabled": "true"},
		ReadBack:  readBackFrom(conn, "written"),
		Delivery:  sdktest.ExactlyOnce,
		Plugin:    sdktest.Plugin("connkit-postgres", "./cmd/connkit-postgres"),
	})
}

// The source's snapshot of a table large enough for the crash check's run,
// resumed from its positions after every kill -9.
func TestSourceConformance(t *testing.T) {
	dbURL, conn := database(t)
	if _, err := conn.Exec(t.Context(), `INSERT INTO sdktest SELECT i, 'row ' || i FROM generate_series(1, 500) i`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pgtest.DropSlots(context.Background(), conn, 5*time.Second) })
	sdktest.Source(t, sdktest.SourceSuite{
		Connector: postgres.Connector,
		Config:    map[string]string{"url": dbURL, "tables": "sdktest", "snapshot.fetchSize": "25"},
		Plugin:    sdktest.Plugin("connkit-postgres", "./cmd/connkit-postgres"),
	})
}
