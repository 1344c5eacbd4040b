package source

import (
	"context"
	"maps"
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-commons/schema/avro"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/examples/postgres/destination"
	"github.com/connkit/connkit/internal/host"
	"github.com/connkit/connkit/internal/pgtest"
	"github.com/connkit/connkit/sdk"
	"github.com/jackc/pgx/v5"
	"github.com/matryer/is"
)

// kindsTable has a column of each kind the source reads, and rows at their
// edges: integers beyond a double's, bytes that are not UTF-8, times with
// microseconds, years BC, infinities, NaN, NULLs.
const kindsTable = `
	CREATE TABLE kinds (
		id bigint PRIMARY KEY, big bigint, i int, small smallint, num numeric, raw bytea,
		tz timestamptz, ts timestamp, day date, flag boolean, r real, d double precision, t text, doc jsonb, tz3 timestamptz(3));
	INSERT INTO kinds VALUES
		(1, 9007199254740993, -2147483648, 32767, 12345678901234567890.123456789012345, '\x00ff',
		 '2026-01-02 03:04:05.123456+05:45', '2026-01-02 03:04:05.654321', '2026-01-02', true, 0.1, 0.1, 'tab	é', '{"a": [1, "b", null], "o": {}}', '2026-01-02 03:04:05.123+00'),
		(2, -9223372036854775808, 0, -1, -0.000001, '\xdeadbeef00c328',
		 '1970-01-01 00:00:00.000001+00', '0001-01-01 00:00:00', '0001-01-01', false, -3.4028235e+38, 5e-324, '', '[]', NULL),
		(3, 9223372036854775807, NULL, NULL, 'NaN', '\x',
		 'infinity', '0044-03-15 12:00:00.5 BC', '-infinity', NULL, 'NaN', '-Infinity', NULL, '"just a string"', '-infinity'),
		(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	CREATE TABLE by_avro (LIKE kinds INCLUDING ALL);
	CREATE TABLE by_plugins (LIKE kinds INCLUDING ALL);
	CREATE TABLE by_struct (LIKE kinds INCLUDING ALL)`

// differences counts (and logs) the rows of kinds and copy that are not in
// the other, comparing each row's text: every column as PostgreSQL prints it.
func differences(t *testing.T, conn *pgx.Conn, copy string) int {
	t.Helper()
	diff := pgtest.Rows(t, conn, `SELECT k::text, c::text FROM kinds k FULL JOIN `+copy+` c ON k::text = c::text WHERE k.id IS NULL OR c.id IS NULL`)
	for _, d := range diff {
		t.Logf("original|copy: %s", d)
	}
	return len(diff)
}

// TestSourceToDestinationBothWays copies a table through the source and
// the destination both ways a record can leave a source plugin: encoded
// with a schema (Avro, by conduit-commons' serde, which schema support
// uses), and with schemas off, as the protocol's Struct (through the real
// plugin binaries, so through the plugin server's wire encoder and
// decoder). Either way the copy equals the original, column by column.
func TestSourceToDestinationBothWays(t *testing.T) {
	url, conn := sourceDB(t, kindsTable)
	t.Run("avro", func(t *testing.T) {
		is := is.New(t)
		s := openSource(t, url, map[string]string{"tables": "kinds", "slot.name": "avro"}, nil)
		recs := readN(t, s, 4)
		for i, r := range recs {
			recs[i].Key = throughAvro(t, r.Key.(sdk.StructuredData))
			recs[i].Payload.After = throughAvro(t, r.Payload.After.(sdk.StructuredData))
		}
		// What the decoder gives: exact types, not text.
		is.Equal(recs[0].Payload.After.(sdk.StructuredData)["big"], int64(9007199254740993))
		is.Equal(recs[0].Payload.After.(sdk.StructuredData)["tz"], time.Date(2026, 1, 1, 21, 19, 5, 123456000, time.UTC))

		d, err := destination.New(destination.Config{URL: url, Table: "by_avro"})
		is.NoErr(err)
		is.NoErr(d.Open(t.Context()))
		defer d.Teardown(context.Background())
		n, err := d.Write(t.Context(), recs)
		is.NoErr(err)
		is.Equal(n, 4)
		is.Equal(differences(t, conn, "by_avro"), 0)
	})
	// Through the plugins: with schemas on (the default: the plugins share a
	// schema service, as in Conduit) and off (the protocol's Struct).
	noSchemas := map[string]string{"sdk.schema.extract.key.enabled": "false", "sdk.schema.extract.payload.enabled": "false"}
	for _, tt := range []struct {
		name     string
		settings map[string]string
	}{{"plugins", nil}, {"struct", noSchemas}} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			schemas, err := host.StartSchemaService()
			is.NoErr(err)
			defer schemas.Stop()
			table := "by_" + tt.name
			src, err := launch(t, "pg-source", schemas).Source()
			is.NoErr(err)
			_, err = src.Configure(ctx, pconnector.SourceConfigureRequest{Config: with(tt.settings, "url", url, "tables", "kinds", "slot.name", tt.name)})
			is.NoErr(err)
			_, err = src.Open(ctx, pconnector.SourceOpenRequest{})
			is.NoErr(err)
			dst, err := launch(t, "pg-destination", schemas).Destination()
			is.NoErr(err)
			_, err = dst.Configure(ctx, pconnector.DestinationConfigureRequest{Config: with(tt.settings, "url", url, "table", table)})
			is.NoErr(err)
			_, err = dst.Open(ctx, pconnector.DestinationOpenRequest{})
			is.NoErr(err)
			res, err := host.Pipeline{Source: src, Destination: dst, Records: 4}.Run(ctx)
			is.NoErr(err)
			is.Equal(res.Acked, int64(4))
			is.Equal(differences(t, conn, table), 0)
		})
	}
}

// with returns settings and the key-value pairs kv in one map.
func with(settings map[string]string, kv ...string) map[string]string {
	out := maps.Clone(settings)
	if out == nil {
		out = map[string]string{}
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// throughAvro encodes d with the schema extracted from it and decodes it,
// as a schema-encoding source plugin and a decoding destination plugin do.
func throughAvro(t *testing.T, d sdk.StructuredData) sdk.StructuredData {
	t.Helper()
	serde, err := avro.SerdeForType(d)
	if err != nil {
		t.Fatalf("extract a schema from %v: %v", d, err)
	}
	b, err := serde.Marshal(d)
	if err != nil {
		t.Fatalf("encode %v: %v", d, err)
	}
	var out opencdc.StructuredData
	if err := serde.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode %v: %v", d, err)
	}
	return out
}

// launch starts the connector's plugin binary: $CONNKIT_BIN's (make build
// puts it there) or, without it, one built for the test.
func launch(t *testing.T, id string, schemas *host.SchemaService) *host.Plugin {
	t.Helper()
	bin := filepath.Join(os.Getenv("CONNKIT_BIN"), "connkit-postgres")
	if _, err := os.Stat(bin); os.Getenv("CONNKIT_BIN") == "" || err != nil {
		bin = filepath.Join(t.TempDir(), "connkit-postgres")
		if out, err := osexec.Command("go", "build", "-o", bin, "../cmd/connkit-postgres").CombinedOutput(); err != nil {
			t.Fatalf("build the plugin: %v\n%s", err, out)
		}
	}
	p, err := host.Launch(bin, host.Options{ConnectorID: id, LogLevel: "warn", Schemas: schemas})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}
