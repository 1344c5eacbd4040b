package generator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/connkit/connkit/sdk"
	"github.com/matryer/is"
)

func open(t testing.TB, raw map[string]string, from sdk.Position) *Source {
	t.Helper()
	src, err := Connector.Source.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Open(t.Context(), from); err != nil {
		t.Fatal(err)
	}
	return src.(*Source)
}

func TestRawPayloadIsTheFieldsAsJSON(t *testing.T) {
	is := is.New(t)
	src := open(t, map[string]string{
		"format.options.id": "int", "format.options.name": "string", "format.options.at": "time",
		"format.options.ok": "bool", "format.options.took": "duration",
	}, nil)
	r, err := src.Read(t.Context())
	is.NoErr(err)
	is.Equal(string(r.Position), "1")
	is.Equal(string(r.Key.Bytes()), "1")
	is.Equal(r.Operation, sdk.OperationCreate)
	payload, err := sdk.FieldsOf(r.Payload.After)
	is.NoErr(err) // a JSON object
	is.Equal(len(payload), 5)
	_, err = payload.Int("id")
	is.NoErr(err)
	name, err := payload.String("name")
	is.NoErr(err)
	is.True(strings.Contains(name, "-"))
	_, err = payload.Time("at")
	is.NoErr(err)
	_, err = payload.Bool("ok")
	is.NoErr(err)
	_, err = payload.Int("took") // nanoseconds
	is.NoErr(err)
}

func TestStructuredPayloadHasTheSameShape(t *testing.T) {
	is := is.New(t)
	src := open(t, map[string]string{"format.type": "structured", "format.options.id": "int", "format.options.at": "time"}, nil)
	r, err := src.Read(t.Context())
	is.NoErr(err)
	data := r.Payload.After.(sdk.StructuredData)
	_, isInt := data["id"].(int64)
	is.True(isInt)
	_, isString := data["at"].(string) // protocol-safe: no time.Time in structured data
	is.True(isString)
}

func TestFilePayload(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "payload.bin")
	is.NoErr(os.WriteFile(path, []byte("hello"), 0o644))
	src := open(t, map[string]string{"format.type": "file", "format.options.path": path}, nil)
	r, err := src.Read(t.Context())
	is.NoErr(err)
	is.Equal(string(r.Payload.After.Bytes()), "hello")
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		raw  map[string]string
		want string
	}{
		{map[string]string{}, `parameter "format.options.*": got no fields`},
		{map[string]string{"format.options.id": "integer"}, `parameter "format.options.id": got "integer", expected one of int, string, time, bool, duration`},
		{map[string]string{"format.type": "file"}, `parameter "format.options.path": is required when format.type is file`},
		{map[string]string{"format.type": "csv", "format.options.id": "int"}, `parameter "format.type": got "csv", expected one of raw, structured, file`},
		{map[string]string{"format.options.id": "int", "recordCount": "-1"}, `parameter "recordCount": got "-1", expected at least 0`},
		{map[string]string{"format.options.id": "int", "recordCount": "99999999999999999999"}, `parameter "recordCount": got "99999999999999999999", expected between 0 and 9223372036854775807`},
		{map[string]string{"format.options.id": "int", "rate": "99999999999999999999"}, `parameter "rate": got "100000000000000000000", expected 0 (as fast as possible) or from 0.000001 to 1000000000 records per second`},
		{map[string]string{"format.options.id": "int", "rate": "-0.5"}, `parameter "rate": got "-0.5", expected 0 (as fast as possible) or from 0.000001`},
		{map[string]string{"format.options.id": "int", "rate": "1e-300"}, `parameter "rate": got "0.000`},
		{map[string]string{"format.options.id": "int", "rate": "NaN"}, `parameter "rate": got "NaN", expected a finite number`},
		{map[string]string{"format.options.id": "int", "burst.sleepTime": "-1s"}, `parameter "burst.sleepTime": got "-1s", expected at least 0s`},
		{map[string]string{"format.options.id": "int", "burst.sleepTime": "1s", "burst.generateTime": "0s"}, `parameter "burst.generateTime": got "0s", expected longer than 0s`},
	}
	for _, tt := range tests {
		_, err := Connector.Source.New(tt.raw)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("config %v: got %v, want an error containing %q", tt.raw, err, tt.want)
		}
	}
	// A file that cannot be read is reported when the source opens.
	src, err := Connector.Source.New(map[string]string{"format.type": "file", "format.options.path": "/nonexistent"})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Open(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "format.options.path") {
		t.Errorf("Open: got %v, want an error naming format.options.path", err)
	}
}

func TestResumesAfterPositionAndStopsAtRecordCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		src := open(t, map[string]string{"format.options.id": "int", "recordCount": "10"}, sdk.Position("7"))
		for _, want := range []string{"8", "9", "10"} {
			r, err := src.Read(t.Context())
			is.NoErr(err)
			is.Equal(string(r.Position), want)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := src.Read(ctx)
			done <- err
		}()
		synctest.Wait()
		is.Equal(len(done), 0) // all records generated: Read waits
		cancel()
		is.Equal(<-done, context.Canceled)
	})
}

func TestOpenRejectsForeignPositions(t *testing.T) {
	src, err := Connector.Source.New(map[string]string{"format.options.id": "int"})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Open(t.Context(), sdk.Position("not-a-number")); err == nil {
		t.Error("Open accepted a position that is not a sequence number")
	}
}

func TestRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		src := open(t, map[string]string{"format.options.id": "int", "rate": "20"}, nil)
		start := time.Now()
		for range 41 {
			_, err := src.Read(t.Context())
			is.NoErr(err)
		}
		is.Equal(time.Since(start), 2*time.Second) // 40 intervals of 50ms
	})
}

func BenchmarkRead(b *testing.B) {
	for _, format := range []string{"raw", "structured"} {
		b.Run(format, func(b *testing.B) {
			src := open(b, map[string]string{"format.type": format,
				"format.options.id": "int", "format.options.name": "string", "format.options.at": "time"}, nil)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := src.Read(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestReadBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		src := open(t, map[string]string{"format.options.id": "int", "recordCount": "25"}, sdk.Position("3"))
		var got []string
		for len(got) < 22 {
			recs, err := src.ReadBatch(t.Context(), 10)
			is.NoErr(err)
			is.True(len(recs) <= 10)
			for _, r := range recs {
				got = append(got, string(r.Position))
			}
		}
		is.Equal(got[0], "4")
		is.Equal(got[21], "25")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		recs, err := src.ReadBatch(ctx, 10) // all generated: waits for ctx
		is.Equal(err, context.Canceled)
		is.Equal(len(recs), 0)
	})
}

func BenchmarkReadBatch(b *testing.B) {
	src := open(b, map[string]string{"format.options.id": "int", "format.options.name": "string", "format.options.at": "time"}, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := src.ReadBatch(b.Context(), 1000); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "records/s")
}

func TestOperations(t *testing.T) {
	is := is.New(t)
	src := open(t, map[string]string{"format.options.id": "int", "operations": "create, update,delete ,snapshot"}, nil)
	seen := map[sdk.Operation]int{}
	for range 400 {
		r, err := src.Read(t.Context())
		is.NoErr(err)
		seen[r.Operation]++
		_, err = r.Metadata.GetReadAt() // Debezium's ts_ms comes from it
		is.NoErr(err)
		if r.Operation == sdk.OperationDelete {
			is.Equal(r.Payload.After, nil) // a deletion carries the key only
		} else {
			is.True(r.Payload.After != nil)
		}
	}
	for _, op := range []sdk.Operation{sdk.OperationCreate, sdk.OperationUpdate, sdk.OperationDelete, sdk.OperationSnapshot} {
		is.True(seen[op] > 50) // each picked about a quarter of the time
	}
	_, err := Connector.Source.New(map[string]string{"format.options.id": "int", "operations": "create,upsert"})
	if err == nil || !strings.Contains(err.Error(), `parameter "operations": got "upsert"`) {
		t.Errorf("got %v", err)
	}
}

func TestBursts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := is.New(t)
		src := open(t, map[string]string{"format.options.id": "int", "rate": "10", "burst.generateTime": "1s", "burst.sleepTime": "2s"}, nil)
		start := time.Now()
		var at []time.Duration
		for range 12 {
			_, err := src.Read(t.Context())
			is.NoErr(err)
			at = append(at, time.Since(start))
		}
		is.Equal(at[9], 900*time.Millisecond) // ten records in the first second
		is.Equal(at[10], 3*time.Second)       // then a two-second pause
		is.Equal(at[11], 3100*time.Millisecond)

		// Batch reads pause the same way.
		batch := open(t, map[string]string{"format.options.id": "int", "burst.generateTime": "1s", "burst.sleepTime": "2s"}, nil)
		start = time.Now()
		_, err := batch.ReadBatch(t.Context(), 100)
		is.NoErr(err)
		time.Sleep(time.Second)
		_, err = batch.ReadBatch(t.Context(), 100)
		is.NoErr(err)
		is.Equal(time.Since(start), 3*time.Second)
	})
}

func TestCollections(t *testing.T) {
	is := is.New(t)
	src := open(t, map[string]string{
		"collections.users.format.type": "structured", "collections.users.format.options.name": "string",
		"collections.orders.format.options.total": "int", "collections.orders.operations": "update",
	}, sdk.Position("6"))
	for _, want := range []struct{ collection, op string }{{"orders", "update"}, {"users", "create"}, {"orders", "update"}} {
		r, err := src.Read(t.Context())
		is.NoErr(err)
		c, err := r.Metadata.GetCollection()
		is.NoErr(err)
		is.Equal(c, want.collection) // in name order, continuing the rotation after a restart
		is.Equal(r.Operation.String(), want.op)
		if c == "users" {
			payload, err := sdk.FieldsOf(r.Payload.After)
			is.NoErr(err)
			_, err = payload.String("name")
			is.NoErr(err)
		} else {
			payload, err := sdk.FieldsOf(r.Payload.After)
			is.NoErr(err)
			_, err = payload.Int("total")
			is.NoErr(err)
		}
	}
	_, err := Connector.Source.New(map[string]string{"collections.users.format.options.id": "integer"})
	if err == nil || !strings.Contains(err.Error(), `parameter "collections.users.format.options.id": got "integer"`) {
		t.Errorf("got %v", err)
	}
	_, err = Connector.Source.New(map[string]string{"collections.users.format.type": "file"})
	if err == nil || !strings.Contains(err.Error(), `parameter "collections.users.format.options.path": is required`) {
		t.Errorf("got %v", err)
	}
}
