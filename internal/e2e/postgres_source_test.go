package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/host"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// sourceDatabase creates a database with the given tables and returns its
// URL and a connection to it. The replication slots of the database are
// dropped when the test ends.
func sourceDatabase(t *testing.T, ddl string) (string, *pgx.Conn) {
	t.Helper()
	url, conn := pg.Database(t, ddl)
	t.Cleanup(func() { pgtest.DropSlots(context.Background(), conn, 15*time.Second) })
	return url, conn
}

// dbName is the database a URL names, which the tests also use as the
// replication slot's name: slots are the server's, not a database's.
func dbName(url string) string {
	return url[strings.LastIndex(url, "/")+1 : strings.Index(url, "?")]
}

// sourceRun is a postgres source plugin running from a position.
type sourceRun struct {
	p      *host.Plugin
	stream pconnector.SourceRunStream
	extra  []opencdc.Record // received and not yet returned by read
}

func startSource(t *testing.T, config map[string]string, from opencdc.Position) *sourceRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	p := launch(t, "connkit-postgres", host.Options{ConnectorID: "pg-source", LogLevel: "info"})
	src, err := p.Source()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Configure(ctx, pconnector.SourceConfigureRequest{Config: config}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Open(ctx, pconnector.SourceOpenRequest{Position: from}); err != nil {
		t.Fatal(err)
	}
	stream := src.NewStream()
	if err := src.Run(t.Context(), stream); err != nil {
		t.Fatal(err)
	}
	return &sourceRun{p: p, stream: stream}
}

// read returns the next n records.
func (r *sourceRun) read(t *testing.T, n int) []opencdc.Record {
	t.Helper()
	for len(r.extra) < n {
		resp, err := r.stream.Client().Recv()
		if err != nil {
			t.Fatalf("after %d of %d records: %v", len(r.extra), n, err)
		}
		r.extra = append(r.extra, resp.Records...)
	}
	out := r.extra[:n]
	r.extra = r.extra[n:]
	return out
}

func (r *sourceRun) ack(t *testing.T, recs []opencdc.Record) {
	t.Helper()
	var acks []opencdc.Position
	for _, rec := range recs {
		acks = append(acks, rec.Position)
	}
	if err := r.stream.Client().Send(pconnector.SourceRunRequest{AckPositions: acks}); err != nil {
		t.Fatal(err)
	}
}

// apply plays records onto a map of id → n, as a destination would.
func apply(t *testing.T, table map[float64]float64, recs []opencdc.Record) {
	t.Helper()
	for _, r := range recs {
		id := r.Key.(opencdc.StructuredData)["id"].(float64) // numbers cross the protocol as doubles
		if r.Operation == opencdc.OperationDelete {
			delete(table, id)
			continue
		}
		table[id] = r.Payload.After.(opencdc.StructuredData)["n"].(float64)
	}
}

// TestPostgresSourceOverTheProtocol runs the source as a plugin, killing
// the process between acks in the snapshot and again while it streams
// changes, and checks that each restart from the last acked position goes
// on right after it: the records of all runs, applied in order, rebuild the
// table.
func TestPostgresSourceOverTheProtocol(t *testing.T) {
	is := is.New(t)
	url, conn := sourceDatabase(t, `
		CREATE TABLE items (id int PRIMARY KEY, name text, n bigint, at timestamptz DEFAULT now());
		INSERT INTO items (id, name, n) SELECT i, 'item ' || i, 0 FROM generate_series(1, 3000) i;
	`)
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(t.Context(), sql); err != nil {
			t.Fatal(err)
		}
	}
	// Schemas off: the test reads the protocol's structured data itself.
	config := map[string]string{"url": url, "tables": "items", "slot.name": dbName(url), "snapshot.fetchSize": "500", "sdk.batch.size": "100", "sdk.batch.delay": "10ms",
		"sdk.schema.extract.key.enabled": "false", "sdk.schema.extract.payload.enabled": "false"}
	table := map[float64]float64{}

	// Run 1: part of the snapshot, acked up to record 1200, then the process dies.
	run := startSource(t, config, nil)
	recs := run.read(t, 1500)
	for i, r := range recs {
		is.Equal(r.Operation, opencdc.OperationSnapshot)
		is.Equal(r.Key, opencdc.StructuredData{"id": float64(i + 1)})
		is.Equal(r.Metadata["opencdc.collection"], "items")
	}
	run.ack(t, recs[:1200])
	apply(t, table, recs[:1200])
	last := recs[1199].Position
	run.p.Kill()

	// Changes while no one reads.
	exec(`INSERT INTO items (id, name, n) SELECT i, 'new', 1 FROM generate_series(3001, 3010) i`)
	exec(`BEGIN; UPDATE items SET n = 2 WHERE id <= 5 OR id > 2995; DELETE FROM items WHERE id BETWEEN 1001 AND 1005; COMMIT`)

	// Run 2: the rest of the snapshot, read under a fresh snapshot (the
	// slot's went with the process) that keeps only the rows the first
	// one saw unchanged (1201 to 2995); then every change since the slot
	// was created: the 10 inserts, then the 20 updates (rows 2996 to 3000
	// come as their updates alone) and 5 deletes, acked up to the middle
	// of the second transaction.
	run = startSource(t, config, last)
	recs = run.read(t, 1795+35)
	is.Equal(recs[0].Key, opencdc.StructuredData{"id": float64(1201)}) // right after the last ack
	is.Equal(recs[1794].Operation, opencdc.OperationSnapshot)
	is.Equal(recs[1794].Key, opencdc.StructuredData{"id": float64(2995)})
	for i, r := range recs[1795:] {
		want := opencdc.OperationCreate
		switch {
		case i >= 30:
			want = opencdc.OperationDelete
		case i >= 10:
			want = opencdc.OperationUpdate
		}
		is.Equal(r.Operation, want)
	}
	run.ack(t, recs[:1795+22])
	apply(t, table, recs[:1795+22])
	last = recs[1795+21].Position
	run.p.Kill()

	exec(`DELETE FROM items WHERE id = 3001`)

	// Run 3: the second transaction's last 13 changes, then the delete.
	run = startSource(t, config, last)
	recs = run.read(t, 14)
	is.Equal(recs[13].Operation, opencdc.OperationDelete)
	is.Equal(recs[13].Key, opencdc.StructuredData{"id": float64(3001)})
	apply(t, table, recs)
	run.ack(t, recs)
	is.Equal(table, queryMap[float64, float64](t, conn, `SELECT id::float8, n::float8 FROM items`))
}

// TestConduitPostgresSource runs standalone:postgres → standalone:postgres
// in real Conduit, with both engines: it copies a table into another
// database, then its changes, and checks that the copy equals the original.
func TestConduitPostgresSource(t *testing.T) {
	t.Run("default engine", func(t *testing.T) { conduitPostgresSource(t) })
	t.Run("v2 engine", func(t *testing.T) { conduitPostgresSource(t, "--preview.pipeline-arch-v2") })
}

func conduitPostgresSource(t *testing.T, flags ...string) {
	const ddl = `CREATE TABLE items (id int PRIMARY KEY, name text, n bigint, price numeric(10,2), at timestamptz, tags text[], doc jsonb)`
	from, src := sourceDatabase(t, ddl+`;
		INSERT INTO items SELECT i, 'item ' || i, i * 10, i / 7.0, '2026-01-01'::timestamptz + i * interval '1 minute', ARRAY['a', 'b' || i], jsonb_build_object('i', i)
		FROM generate_series(1, 5000) i`)
	to, dst := sourceDatabase(t, ddl)
	batch := map[string]string{"sdk.batch.size": "1000", "sdk.batch.delay": "20ms"}
	pipeline := pipelineYAML("standalone:postgres", merge(batch, map[string]string{"url": from, "tables": "items", "slot.name": dbName(from)}),
		"standalone:postgres", merge(batch, map[string]string{"url": to}))
	is := is.New(t)
	c := startConduit(t, pipeline, flags...)
	c.waitForAcked(5000)
	for _, sql := range []string{
		`INSERT INTO items (id, name, n) SELECT i, 'new ' || i, i FROM generate_series(5001, 5100) i`,
		`UPDATE items SET n = -n, doc = NULL WHERE id % 100 = 0`, // 51 rows
		`DELETE FROM items WHERE id BETWEEN 2001 AND 2020`,
	} {
		if _, err := src.Exec(t.Context(), sql); err != nil {
			t.Fatal(err)
		}
	}
	c.waitForAcked(5000 + 100 + 51 + 20)
	is.Equal(count(t, to, `SELECT count(*) FROM items`), int64(5080))
	is.Equal(dump(t, dst, "items"), dump(t, src, "items"))
	c.stop()
	c.checkProblems()
}
