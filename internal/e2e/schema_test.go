package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/conduitio/conduit-connector-protocol/pconnutils"
	"github.com/connkit/connkit/internal/host"
	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/connkit/connkit/internal/schema"
	"github.com/matryer/is"
)

// These tests run connkit's plugins against a schema service the test
// serves through the protocol's server side, from a registry it watches:
// every call a plugin makes is counted, with the token it presented.

// schemaCall is one call the schema service made to its registry.
type schemaCall struct {
	method  string // "Create" or "Get"
	subject string
	version int // Get's argument; Create's result
	token   string
}

// watched is a registry that records every call the service makes to it.
type watched struct {
	schema.Registry
	mu    sync.Mutex
	calls []schemaCall
}

func (w *watched) Create(ctx context.Context, subject string, typ schema.Type, text []byte) (schema.Schema, error) {
	s, err := w.Registry.Create(ctx, subject, typ, text)
	w.record(schemaCall{"Create", subject, s.Version, pconnutils.ConnectorTokenFromContext(ctx)})
	return s, err
}

func (w *watched) Get(ctx context.Context, subject string, version int) (schema.Schema, error) {
	w.record(schemaCall{"Get", subject, version, pconnutils.ConnectorTokenFromContext(ctx)})
	return w.Registry.Get(ctx, subject, version)
}

func (w *watched) record(c schemaCall) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, c)
}

// of returns the calls of method made so far.
func (w *watched) of(method string) []schemaCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []schemaCall
	for _, c := range w.calls {
		if c.method == method {
			out = append(out, c)
		}
	}
	return out
}

// serveSchemas starts a schema service of the test's own. The test
// registers schemas in the returned registry directly, unwatched.
func serveSchemas(t *testing.T) (*host.SchemaService, schema.Registry, *watched) {
	t.Helper()
	reg := schema.NewInMemory()
	w := &watched{Registry: reg}
	svc, err := host.ServeSchemas(w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	return svc, reg, w
}

// typed is a payload with the values that do not survive a careless trip:
// an int64 a float64 would round, bytes, a nested map and a nil.
func typed(i int) opencdc.StructuredData {
	return opencdc.StructuredData{
		"id":     int64(1<<60 + 2*i + 1), // odd and above 2^53: no float64 holds it
		"bytes":  []byte{0, byte(i), 0xff},
		"nested": map[string]any{"name": fmt.Sprintf("n-%d", i), "count": int64(i)},
		"none":   nil,
	}
}

// typedKey is the key of typed(i): its id.
func typedKey(i int) opencdc.StructuredData {
	return opencdc.StructuredData{"id": typed(i)["id"]}
}

// avroCodec registers d's extracted schema under subject and returns its
// codec.
func avroCodec(t *testing.T, reg schema.Registry, subject string, d opencdc.StructuredData) *schema.Codec {
	t.Helper()
	text, err := schema.Extract(d)
	if err != nil {
		t.Fatal(err)
	}
	s, err := reg.Create(t.Context(), subject, schema.TypeAvro, text)
	if err != nil {
		t.Fatal(err)
	}
	c, err := schema.NewCodec(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// avroRecord returns a record whose key and payload are encoded with
// the codecs, and whose metadata names their schemas.
func avroRecord(t *testing.T, pos string, keyCodec, payloadCodec *schema.Codec, key, payload opencdc.StructuredData) opencdc.Record {
	t.Helper()
	k, err := keyCodec.Encode(key)
	if err != nil {
		t.Fatal(err)
	}
	p, err := payloadCodec.Encode(payload)
	if err != nil {
		t.Fatal(err)
	}
	ks, ps := keyCodec.Schema(), payloadCodec.Schema()
	return opencdc.Record{
		Position:  opencdc.Position(pos),
		Operation: opencdc.OperationCreate,
		Metadata: opencdc.Metadata{
			opencdc.MetadataKeySchemaSubject:     ks.Subject,
			opencdc.MetadataKeySchemaVersion:     strconv.Itoa(ks.Version),
			opencdc.MetadataPayloadSchemaSubject: ps.Subject,
			opencdc.MetadataPayloadSchemaVersion: strconv.Itoa(ps.Version),
		},
		Key:     opencdc.RawData(k),
		Payload: opencdc.Change{After: opencdc.RawData(p)},
	}
}

// typedBatch registers the schemas of typedKey and typed under the
// subjects name:key and name:payload, and returns n records encoded with
// them, record i of typedKey(i) and typed(i) at position prefix+"<i>".
func typedBatch(t *testing.T, reg schema.Registry, name, prefix string, n int) []opencdc.Record {
	t.Helper()
	keyCodec := avroCodec(t, reg, name+":key", typedKey(0))
	payloadCodec := avroCodec(t, reg, name+":payload", typed(0))
	batch := make([]opencdc.Record, n)
	for i := range batch {
		batch[i] = avroRecord(t, prefix+strconv.Itoa(i), keyCodec, payloadCodec, typedKey(i), typed(i))
	}
	return batch
}

// jsonlDestination is a connkit-jsonl destination, opened and running,
// that writes to path.
type jsonlDestination struct {
	host.DestinationPlugin
	stream pconnector.DestinationRunStream
	path   string
}

func openJSONL(t *testing.T, svc *host.SchemaService, token string, config map[string]string) *jsonlDestination {
	t.Helper()
	is := is.New(t)
	p := launch(t, "connkit-jsonl", host.Options{ConnectorID: "dest", Schemas: svc, Token: token})
	dst, err := p.Destination()
	is.NoErr(err)
	path := filepath.Join(t.TempDir(), "out.jsonl")
	cfg := map[string]string{"path": path, "sync": "false"}
	for k, v := range config {
		cfg[k] = v
	}
	_, err = dst.Configure(t.Context(), pconnector.DestinationConfigureRequest{Config: cfg})
	is.NoErr(err)
	_, err = dst.Open(t.Context(), pconnector.DestinationOpenRequest{})
	is.NoErr(err)
	ctx, stopRun := context.WithCancel(t.Context())
	stream := dst.NewStream()
	is.NoErr(dst.Run(ctx, stream))
	t.Cleanup(func() {
		stopRun()
		_, _ = dst.Teardown(context.Background(), pconnector.DestinationTeardownRequest{})
	})
	return &jsonlDestination{DestinationPlugin: dst, stream: stream, path: path}
}

// send sends each message and returns the ack messages, once there is an
// ack for every record sent.
func (d *jsonlDestination) send(t *testing.T, messages ...[]opencdc.Record) [][]pconnector.DestinationRunResponseAck {
	t.Helper()
	is := is.New(t)
	total := 0
	for _, m := range messages {
		total += len(m)
	}
	sent := make(chan error, 1) // reported once the acks are in; no t calls from the goroutine
	go func() {
		for _, m := range messages {
			if err := d.stream.Client().Send(pconnector.DestinationRunRequest{Records: m}); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	var out [][]pconnector.DestinationRunResponseAck
	for n := 0; n < total; {
		resp, err := d.stream.Client().Recv()
		is.NoErr(err)
		out = append(out, resp.Acks)
		n += len(resp.Acks)
	}
	is.NoErr(<-sent)
	return out
}

// stop stops the destination after the record at last.
func (d *jsonlDestination) stop(t *testing.T, last opencdc.Position) {
	t.Helper()
	_, err := d.Stop(t.Context(), pconnector.DestinationStopRequest{LastPosition: last})
	if err != nil {
		t.Fatal(err)
	}
}

// writtenLine is a line of the jsonl destination's file, with structured
// data kept as the JSON text written, so that numbers are compared digit by
// digit rather than as float64.
type writtenLine struct {
	Position []byte          `json:"position"`
	Key      json.RawMessage `json:"key"`
	After    json.RawMessage `json:"after"`
}

func (d *jsonlDestination) lines(t *testing.T) []writtenLine {
	t.Helper()
	return readJSONLines[writtenLine](t, d.path)
}

// asWritten is structured data as the jsonl destination writes it.
func asWritten(t *testing.T, d opencdc.StructuredData) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"structured": map[string]any(d)})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// flatten returns the acks of every message, in order.
func flatten(messages [][]pconnector.DestinationRunResponseAck) []pconnector.DestinationRunResponseAck {
	var out []pconnector.DestinationRunResponseAck
	for _, m := range messages {
		out = append(out, m...)
	}
	return out
}

// TestSchemaDecodeOverTheProtocol sends Avro records, in one message and one
// record per message, to the jsonl destination, which writes the decoded
// data: each line must be the original typed data, written exactly.
func TestSchemaDecodeOverTheProtocol(t *testing.T) {
	const records = 20
	for _, tt := range []struct {
		name       string
		perMessage bool
	}{{"one message", false}, {"one record per message", true}} {
		t.Run(tt.name, func(t *testing.T) {
			leakcheck.Check(t)
			is := is.New(t)
			svc, reg, _ := serveSchemas(t)
			batch := typedBatch(t, reg, "test", "", records)
			messages := [][]opencdc.Record{batch}
			if tt.perMessage {
				messages = nil
				for _, r := range batch {
					messages = append(messages, []opencdc.Record{r})
				}
			}

			dst := openJSONL(t, svc, "", nil)
			acks := flatten(dst.send(t, messages...))
			for i, a := range acks {
				is.Equal(string(a.Position), strconv.Itoa(i)) // acks in order
				is.Equal(a.Error, "")                         // every record acked
			}
			dst.stop(t, batch[len(batch)-1].Position)

			lines := dst.lines(t)
			is.Equal(len(lines), records)
			for i, l := range lines {
				is.Equal(string(l.Position), strconv.Itoa(i))
				is.Equal(string(l.Key), asWritten(t, typedKey(i)))
				is.Equal(string(l.After), asWritten(t, typed(i)))
			}
			// The int64 is written with all its digits: no float64 on the way.
			is.True(strings.Contains(string(lines[0].After), `"id":1152921504606846977`))
		})
	}
}

// TestSchemaFetchedOncePerVersion sends records naming two versions of a
// payload subject and one key schema, alternately, one per message and in
// a large message: the plugin asks the service for each version once.
func TestSchemaFetchedOncePerVersion(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	svc, reg, calls := serveSchemas(t)
	keyCodec := avroCodec(t, reg, "cache:key", opencdc.StructuredData{"id": int64(0)})
	v1 := avroCodec(t, reg, "cache:payload", opencdc.StructuredData{"a": "x"})
	v2 := avroCodec(t, reg, "cache:payload", opencdc.StructuredData{"a": "x", "b": int64(1)})
	is.Equal(v2.Schema().Version, 2)

	var messages [][]opencdc.Record
	var last []opencdc.Record
	for i := range 200 {
		codec, payload := v1, opencdc.StructuredData{"a": strconv.Itoa(i)}
		if i%2 == 1 {
			codec, payload = v2, opencdc.StructuredData{"a": strconv.Itoa(i), "b": int64(i)}
		}
		r := avroRecord(t, strconv.Itoa(i), keyCodec, codec, opencdc.StructuredData{"id": int64(i)}, payload)
		if i < 100 {
			messages = append(messages, []opencdc.Record{r})
		} else {
			last = append(last, r)
		}
	}
	messages = append(messages, last)

	dst := openJSONL(t, svc, "", nil)
	for _, a := range flatten(dst.send(t, messages...)) {
		is.Equal(a.Error, "")
	}
	dst.stop(t, last[len(last)-1].Position)

	gets := map[string]int{}
	for _, c := range calls.of("Get") {
		gets[fmt.Sprintf("%s v%d", c.subject, c.version)]++
	}
	is.Equal(gets, map[string]int{"cache:key v1": 1, "cache:payload v1": 1, "cache:payload v2": 1})
	is.Equal(len(dst.lines(t)), 200)
}

// TestSchemaMissingSubjectIsNacked writes a batch whose third record names
// a subject the service does not have: the records before it are written and
// acked, it is nacked with an error naming its position and the subject.
func TestSchemaMissingSubjectIsNacked(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	svc, reg, _ := serveSchemas(t)
	const size, bad = 5, 2
	batch := typedBatch(t, reg, "miss", "pos-", size)
	batch[bad].Metadata[opencdc.MetadataPayloadSchemaSubject] = "no-such-subject"

	// One Write of the whole batch: it is complete at its size, and a delay
	// it never reaches keeps it from being written early.
	dst := openJSONL(t, svc, "", map[string]string{"sdk.batch.size": strconv.Itoa(size), "sdk.batch.delay": "1h"})
	messages := dst.send(t, batch)
	is.Equal(len(messages), 1) // one Write, one ack message
	acks := messages[0]
	for i, a := range acks {
		is.Equal(string(a.Position), string(batch[i].Position))
		if i < bad {
			is.Equal(a.Error, "") // written before the failure
		} else {
			is.True(a.Error != "") // nothing after the failure is acked positively
		}
	}
	for _, want := range []string{`position "pos-2"`, `"no-such-subject"`, "not found"} {
		if !strings.Contains(acks[bad].Error, want) {
			t.Errorf("nack %q does not contain %q", acks[bad].Error, want)
		}
	}
	is.Equal(strings.Count(acks[bad].Error, `"no-such-subject"`), 1) // said once, not at every layer
	dst.stop(t, batch[len(batch)-1].Position)
	lines := dst.lines(t)
	is.Equal(len(lines), bad) // only the records acked were written
	for i, l := range lines {
		is.Equal(string(l.After), asWritten(t, typed(i)))
	}
}

// TestSchemaCorruptPayloadIsNacked writes batches with a payload that is not
// valid Avro at position k: the records before it are written and acked, it
// is nacked with an error naming its position, the subject and the
// version, and no record after it is acked positively by the same Write.
func TestSchemaCorruptPayloadIsNacked(t *testing.T) {
	const size = 5
	for _, k := range []int{0, size / 2, size - 1} {
		t.Run(fmt.Sprintf("at %d", k), func(t *testing.T) {
			leakcheck.Check(t)
			is := is.New(t)
			svc, reg, _ := serveSchemas(t)
			batch := typedBatch(t, reg, "corrupt", "pos-", size)
			valid := batch[k].Payload.After.(opencdc.RawData)
			batch[k].Payload.After = valid[:len(valid)/2] // cut short

			dst := openJSONL(t, svc, "", map[string]string{"sdk.batch.size": strconv.Itoa(size), "sdk.batch.delay": "1h"})
			messages := dst.send(t, batch)
			acks := flatten(messages)
			is.Equal(len(acks), size)
			for i, a := range acks {
				is.Equal(string(a.Position), string(batch[i].Position)) // in order
				if i < k {
					is.Equal(a.Error, "")
				}
			}
			nack := acks[k].Error
			for _, want := range []string{fmt.Sprintf("position %q", batch[k].Position), `"corrupt:payload"`, "version 1"} {
				if !strings.Contains(nack, want) {
					t.Errorf("nack %q does not contain %q", nack, want)
				}
			}
			is.Equal(strings.Count(nack, `"corrupt:payload"`), 1) // said once, not at every layer
			// The Write that failed at k acks nothing after k.
			at := 0
			for _, m := range messages {
				if at <= k && k < at+len(m) {
					for _, a := range m[k-at:] {
						is.True(a.Error != "")
					}
				}
				at += len(m)
			}
			dst.stop(t, batch[len(batch)-1].Position)
			lines := dst.lines(t)
			var written []string
			for _, l := range lines {
				written = append(written, string(l.Position))
			}
			var acked []string
			for _, a := range acks {
				if a.Error == "" {
					acked = append(acked, string(a.Position))
				}
			}
			is.Equal(written, acked) // what was acked is what was written
			is.True(!slices.Contains(written, string(batch[k].Position)))
		})
	}
}

// TestSchemaEncodeOverTheProtocol reads structured records of two shapes,
// interleaved, from the jsonl source: they leave as Avro, each shape's
// schema registered once in the connector's schema context and named in
// metadata, and they decode back to exactly what was read.
func TestSchemaEncodeOverTheProtocol(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	svc, reg, calls := serveSchemas(t)
	const records = 60
	payload := func(i int) opencdc.StructuredData {
		if i%3 == 2 {
			return opencdc.StructuredData{"name": fmt.Sprintf("r-%d", i), "tags": map[string]any{"a": true}}
		}
		return opencdc.StructuredData{"n": float64(i), "name": fmt.Sprintf("r-%d", i), "none": nil}
	}
	got := readSource(t, svc, "", writeJSONL(t, records, payload), records)

	codecs := schema.NewCodecs(reg)
	decode := func(r opencdc.Record, subjectKey, versionKey string, d opencdc.Data) opencdc.StructuredData {
		t.Helper()
		v, err := strconv.Atoi(r.Metadata[versionKey])
		is.NoErr(err)
		c, err := codecs.Get(t.Context(), r.Metadata[subjectKey], v)
		is.NoErr(err)
		raw, ok := d.(opencdc.RawData)
		is.True(ok) // left the plugin as Avro
		out, err := c.Decode(raw)
		is.NoErr(err)
		return out
	}
	for i, r := range got {
		is.Equal(r.Metadata[opencdc.MetadataPayloadSchemaSubject], "src:payload") // in the connector's schema context
		is.Equal(r.Metadata[opencdc.MetadataKeySchemaSubject], "src:key")
		is.Equal(decode(r, opencdc.MetadataPayloadSchemaSubject, opencdc.MetadataPayloadSchemaVersion, r.Payload.After), payload(i))
		is.Equal(decode(r, opencdc.MetadataKeySchemaSubject, opencdc.MetadataKeySchemaVersion, r.Key), jsonlKey(i))
	}
	creates := map[string]int{}
	for _, c := range calls.of("Create") {
		creates[fmt.Sprintf("%s v%d", c.subject, c.version)]++
	}
	is.Equal(creates, map[string]int{"src:key v1": 1, "src:payload v1": 1, "src:payload v2": 1}) // once per shape
	is.Equal(len(calls.of("Get")), 0)                                                            // what it created it knows
}

// TestSchemaServiceSeesTheToken runs jsonl source → jsonl destination over
// one schema service, each plugin with a token of its own: the service sees
// the source's on every Create and the destination's on every Get, and the
// destination writes what the source read.
func TestSchemaServiceSeesTheToken(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	svc, _, calls := serveSchemas(t)
	const records = 10
	payload := func(i int) opencdc.StructuredData {
		return opencdc.StructuredData{"n": float64(i), "name": fmt.Sprintf("r-%d", i)}
	}
	read := readSource(t, svc, "source-token", writeJSONL(t, records, payload), records)
	dst := openJSONL(t, svc, "destination-token", nil)
	for _, a := range flatten(dst.send(t, read)) {
		is.Equal(a.Error, "")
	}
	dst.stop(t, read[len(read)-1].Position)

	creates, gets := calls.of("Create"), calls.of("Get")
	is.True(len(creates) > 0 && len(gets) > 0)
	for _, c := range creates {
		is.Equal(c.token, "source-token")
	}
	for _, c := range gets {
		is.Equal(c.token, "destination-token")
	}
	for i, l := range dst.lines(t) {
		is.Equal(string(l.After), asWritten(t, payload(i)))
	}
}

// jsonlKey is the key of writeJSONL's record i.
func jsonlKey(i int) opencdc.StructuredData { return opencdc.StructuredData{"id": float64(i)} }

// writeJSONL writes records records to a file as the jsonl destination
// would, record i with the key jsonlKey(i), the payload payload(i) and the
// position "w-<i>", and returns the file's path.
func writeJSONL(t *testing.T, records int, payload func(int) opencdc.StructuredData) string {
	t.Helper()
	lines := make([]map[string]any, records)
	for i := range lines {
		lines[i] = map[string]any{
			"position":  []byte("w-" + strconv.Itoa(i)),
			"operation": "create",
			"key":       map[string]any{"structured": jsonlKey(i)},
			"after":     map[string]any{"structured": payload(i)},
		}
	}
	return jsonlFile(t, lines)
}

// jsonlFile writes a file of records, each given as the fields of its
// OpenCDC JSON, one a line, and returns its path.
func jsonlFile(t *testing.T, records []map[string]any) string {
	t.Helper()
	var b bytes.Buffer
	for _, r := range records {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readSource runs a connkit-jsonl source of connector ID src on the file
// at path until it has sent want records, acks them, stops it and returns
// them.
func readSource(t *testing.T, svc *host.SchemaService, token, path string, want int) []opencdc.Record {
	t.Helper()
	is := is.New(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	src, err := launch(t, "connkit-jsonl", host.Options{ConnectorID: "src", Schemas: svc, Token: token}).Source()
	is.NoErr(err)
	_, err = src.Configure(ctx, pconnector.SourceConfigureRequest{Config: map[string]string{"path": path, "poll": "10ms"}})
	is.NoErr(err)
	_, err = src.Open(ctx, pconnector.SourceOpenRequest{})
	is.NoErr(err)
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	stream := src.NewStream()
	is.NoErr(src.Run(runCtx, stream))
	var got []opencdc.Record
	for len(got) < want {
		resp, err := stream.Client().Recv()
		is.NoErr(err)
		got = append(got, resp.Records...)
		acks := make([]opencdc.Position, len(resp.Records))
		for i, r := range resp.Records {
			acks[i] = r.Position
		}
		is.NoErr(stream.Client().Send(pconnector.SourceRunRequest{AckPositions: acks}))
	}
	_, err = src.Stop(ctx, pconnector.SourceStopRequest{})
	is.NoErr(err)
	stopRun()
	_, err = src.Teardown(ctx, pconnector.SourceTeardownRequest{})
	is.NoErr(err)
	is.Equal(len(got), want)
	return got
}
