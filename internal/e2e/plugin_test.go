package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/host"
	"github.com/connkit/connkit/internal/leakcheck"
	"github.com/connkit/connkit/internal/schema"
	"github.com/matryer/is"
)

// logBuffer collects a plugin's log lines as the host re-logs them.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until s was logged: stderr lines reach the host
// asynchronously.
func (b *logBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(b.String(), s); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%q was not logged; the log:\n%s", s, b.String())
		}
	}
}

func launch(t *testing.T, name string, opts host.Options) *host.Plugin {
	t.Helper()
	if opts.Schemas == nil {
		opts.Schemas = schemas
	}
	p, err := host.Launch(binary(name), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// source returns the source of a launched connkit-generator.
func source(t *testing.T, opts host.Options) host.SourcePlugin {
	return dispense(t, "connkit-generator", opts, (*host.Plugin).Source)
}

// destination returns the destination of a launched connkit-log.
func destination(t *testing.T, opts host.Options) host.DestinationPlugin {
	return dispense(t, "connkit-log", opts, (*host.Plugin).Destination)
}

// dispense launches the plugin name and returns what get dispenses from it.
func dispense[C any](t *testing.T, name string, opts host.Options, get func(*host.Plugin) (C, error)) C {
	t.Helper()
	c, err := get(launch(t, name, opts))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// openPipeline configures and opens src and dst, as Conduit does before it
// runs a pipeline of them.
func openPipeline(tb testing.TB, ctx context.Context, src host.SourcePlugin, dst host.DestinationPlugin, srcConfig, dstConfig map[string]string) {
	tb.Helper()
	is := is.New(tb)
	_, err := src.Configure(ctx, pconnector.SourceConfigureRequest{Config: srcConfig})
	is.NoErr(err)
	_, err = dst.Configure(ctx, pconnector.DestinationConfigureRequest{Config: dstConfig})
	is.NoErr(err)
	_, err = src.Open(ctx, pconnector.SourceOpenRequest{})
	is.NoErr(err)
	_, err = dst.Open(ctx, pconnector.DestinationOpenRequest{})
	is.NoErr(err)
}

func TestSpecifyOverTheProtocol(t *testing.T) {
	for _, tt := range []struct {
		binary, name, param string
		source              bool
	}{
		{"connkit-generator", "generator", "recordCount", true},
		{"connkit-log", "log", "level", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			p := launch(t, tt.binary, host.Options{})
			spec, err := p.Specifier()
			is.NoErr(err)
			resp, err := spec.Specify(t.Context(), pconnector.SpecifierSpecifyRequest{})
			is.NoErr(err)
			is.Equal(p.ProtocolVersion(), 2) // Conduit v0.14 picks protocol 2
			is.Equal(resp.Specification.Name, tt.name)
			is.Equal(resp.Specification.Version, "v0.1.0")
			params := resp.Specification.DestinationParams
			if tt.source {
				params = resp.Specification.SourceParams
			}
			is.True(params[tt.param].Description != "")

			// The binary prints the same specification as JSON when asked.
			out, err := exec.Command(binary(tt.binary), "spec").Output()
			is.NoErr(err)
			var printed struct{ Name, Version string }
			is.NoErr(json.Unmarshal(out, &printed))
			is.Equal(printed.Name, tt.name)
			is.Equal(printed.Version, "v0.1.0")
		})
	}
}

// TestGeneratorOverTheProtocol runs the generator through every call Conduit
// makes, checks every record and ack, then restarts it from an acked
// position and checks it resumes exactly there.
func TestGeneratorOverTheProtocol(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	config := map[string]string{
		"format.type": "structured", "format.options.id": "int", "format.options.name": "string",
		"recordCount": "50",
	}
	read := func(from opencdc.Position, want int) (got []opencdc.Record) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		src := source(t, host.Options{ConnectorID: "gen", LogLevel: "debug"})
		_, err := src.Configure(ctx, pconnector.SourceConfigureRequest{Config: config})
		is.NoErr(err)
		_, err = src.LifecycleOnCreated(ctx, pconnector.SourceLifecycleOnCreatedRequest{Config: config})
		is.NoErr(err)
		_, err = src.Open(ctx, pconnector.SourceOpenRequest{Position: from})
		is.NoErr(err)
		runCtx, stopRun := context.WithCancel(ctx)
		stream := src.NewStream()
		is.NoErr(src.Run(runCtx, stream))
		for len(got) < want {
			resp, err := stream.Client().Recv()
			is.NoErr(err)
			got = append(got, resp.Records...)
			var acks []opencdc.Position
			for _, r := range resp.Records {
				acks = append(acks, r.Position)
			}
			is.NoErr(stream.Client().Send(pconnector.SourceRunRequest{AckPositions: acks}))
		}
		stop, err := src.Stop(ctx, pconnector.SourceStopRequest{})
		is.NoErr(err)
		is.Equal(string(stop.LastPosition), "50") // recordCount reached: nothing more was sent
		stopRun()
		_, err = src.Teardown(ctx, pconnector.SourceTeardownRequest{})
		is.NoErr(err)
		return got
	}

	first := read(nil, 50)
	// Structured payloads leave the plugin as Avro, with the schema
	// registered in the host's schema service and named in metadata.
	codecs := schema.NewCodecs(schemas.Registry)
	for i, r := range first {
		is.Equal(string(r.Position), strconv.Itoa(i+1))
		is.Equal(r.Operation, opencdc.OperationCreate)
		is.Equal(r.Metadata[opencdc.MetadataPayloadSchemaSubject], "gen:payload") // in the connector's schema context
		version, err := strconv.Atoi(r.Metadata[opencdc.MetadataPayloadSchemaVersion])
		is.NoErr(err)
		c, err := codecs.Get(t.Context(), r.Metadata[opencdc.MetadataPayloadSchemaSubject], version)
		is.NoErr(err)
		payload, err := c.Decode(r.Payload.After.(opencdc.RawData))
		is.NoErr(err)
		_, isInt := payload["id"].(int64)
		_, isString := payload["name"].(string)
		is.True(isInt && isString) // typed as the generator made them
	}
	resumed := read(opencdc.Position("20"), 30)
	is.Equal(string(resumed[0].Position), "21") // resumes right after the acked position
	is.Equal(len(resumed), 30)
}

// TestLogDestinationOverTheProtocol sends records one per message and in
// larger messages, checks every ack and that Stop returns once the last
// position is acked.
func TestLogDestinationOverTheProtocol(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	logs := &logBuffer{}
	dst := destination(t, host.Options{ConnectorID: "log", LogLevel: "info", Log: logs})
	_, err := dst.Configure(ctx, pconnector.DestinationConfigureRequest{Config: map[string]string{"level": "info"}})
	is.NoErr(err)
	_, err = dst.Open(ctx, pconnector.DestinationOpenRequest{})
	is.NoErr(err)
	runCtx, stopRun := context.WithCancel(ctx)
	stream := dst.NewStream()
	is.NoErr(dst.Run(runCtx, stream))

	const total = 300
	go func() {
		for i := 1; i <= total; {
			size := 1
			if i > 100 {
				size = 50 // later records arrive in batches, as with the v2 engine
			}
			batch := make([]opencdc.Record, size)
			for j := range batch {
				batch[j] = opencdc.Record{
					Position:  opencdc.Position(strconv.Itoa(i)),
					Operation: opencdc.OperationCreate,
					Payload:   opencdc.Change{After: opencdc.RawData(fmt.Sprintf("payload-%d", i))},
				}
				i++
			}
			if err := stream.Client().Send(pconnector.DestinationRunRequest{Records: batch}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	next := 1
	for next <= total {
		resp, err := stream.Client().Recv()
		is.NoErr(err)
		for _, a := range resp.Acks {
			is.Equal(string(a.Position), strconv.Itoa(next)) // acks in order, one per record
			is.Equal(a.Error, "")
			next++
		}
	}
	_, err = dst.Stop(ctx, pconnector.DestinationStopRequest{LastPosition: opencdc.Position(strconv.Itoa(total))})
	is.NoErr(err)
	stopRun()
	_, err = dst.Teardown(ctx, pconnector.DestinationTeardownRequest{})
	is.NoErr(err)

	// The plugin's JSON log lines arrive at their level.
	logs.waitFor(t, "[INFO]  plugin.connkit-log: record:")
	logs.waitFor(t, "cGF5bG9hZC0zMDA=") // payload-300, base64 in the record's OpenCDC JSON
}

// TestStopRightBehindTheRecords sends a destination plugin a few records,
// one per message, and Stop right behind them, as Conduit does when a
// pipeline stops, with a batch that would wait long to fill: the plugin
// may get Stop before its Run has taken the stream. Stop must still make
// it write and ack every record at once, not after sdk.batch.delay.
func TestStopRightBehindTheRecords(t *testing.T) {
	const delay = 10 * time.Second
	for attempt := range 5 {
		t.Run(fmt.Sprint(attempt), func(t *testing.T) {
			is := is.New(t)
			dst := destination(t, host.Options{})
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			_, err := dst.Configure(ctx, pconnector.DestinationConfigureRequest{Config: map[string]string{
				"level": "trace", "sdk.batch.size": "10", "sdk.batch.delay": delay.String(),
			}})
			is.NoErr(err)
			_, err = dst.Open(ctx, pconnector.DestinationOpenRequest{})
			is.NoErr(err)
			stream := dst.NewStream()
			is.NoErr(dst.Run(ctx, stream))
			var last opencdc.Position
			for i := range 7 {
				last = opencdc.Position(fmt.Sprint(i))
				is.NoErr(stream.Client().Send(pconnector.DestinationRunRequest{Records: []opencdc.Record{{
					Position: last, Operation: opencdc.OperationCreate, Payload: opencdc.Change{After: opencdc.RawData("x")},
				}}}))
			}
			start := time.Now()
			stopped := make(chan error, 1)
			go func() {
				_, err := dst.Stop(ctx, pconnector.DestinationStopRequest{LastPosition: last})
				stopped <- err
			}()
			acked := 0
			for acked < 7 {
				resp, err := stream.Client().Recv()
				is.NoErr(err)
				for _, a := range resp.Acks {
					is.Equal(a.Error, "")
					is.Equal(string(a.Position), fmt.Sprint(acked))
					acked++
				}
			}
			is.NoErr(<-stopped)
			took := time.Since(start)
			t.Logf("7 records acked and Stop returned %v after Stop", took)
			if took >= delay/2 {
				t.Errorf("the records waited %v after Stop: Stop did not make the plugin write at once", took)
			}
			_, err = dst.Teardown(ctx, pconnector.DestinationTeardownRequest{})
			is.NoErr(err)
		})
	}
}

func TestLogLevelFromConduit(t *testing.T) {
	for _, tt := range []struct {
		level  string // the destination's level parameter
		logged bool   // whether a plugin at warn lets it through
	}{{"info", false}, {"warn", true}, {"error", true}} {
		t.Run(tt.level, func(t *testing.T) {
			is := is.New(t)
			logs := &logBuffer{}
			p := launch(t, "connkit-log", host.Options{LogLevel: "warn", Log: logs})
			dst, err := p.Destination()
			is.NoErr(err)
			_, err = dst.Configure(t.Context(), pconnector.DestinationConfigureRequest{Config: map[string]string{"level": tt.level}})
			is.NoErr(err)
			runAndWrite(t, dst, opencdc.Record{Position: opencdc.Position("the-record")})
			p.Kill() // waits until the plugin's stderr is drained
			// The position, base64 in the record's OpenCDC JSON.
			is.Equal(strings.Contains(logs.String(), "dGhlLXJlY29yZA=="), tt.logged)
			if tt.logged {
				is.True(strings.Contains(logs.String(), "["+strings.ToUpper(tt.level)+"]")) // re-logged at its level
			}
		})
	}
}

// runAndWrite opens dst, writes one record, waits for its ack and tears down.
func runAndWrite(t *testing.T, dst host.DestinationPlugin, r opencdc.Record) []pconnector.DestinationRunResponseAck {
	t.Helper()
	is := is.New(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := dst.Open(ctx, pconnector.DestinationOpenRequest{})
	is.NoErr(err)
	runCtx, stopRun := context.WithCancel(ctx)
	stream := dst.NewStream()
	is.NoErr(dst.Run(runCtx, stream))
	is.NoErr(stream.Client().Send(pconnector.DestinationRunRequest{Records: []opencdc.Record{r}}))
	resp, err := stream.Client().Recv()
	stopRun()
	_, terr := dst.Teardown(ctx, pconnector.DestinationTeardownRequest{})
	is.NoErr(terr)
	if err != nil {
		return []pconnector.DestinationRunResponseAck{{Error: err.Error()}}
	}
	return resp.Acks
}

func TestConfigureErrorsNameTheParameter(t *testing.T) {
	is := is.New(t)
	src := source(t, host.Options{})
	_, err := src.Configure(t.Context(), pconnector.SourceConfigureRequest{Config: map[string]string{
		"format.options.id": "int", "recordcount": "5", "rate": "fast",
	}})
	is.True(err != nil)
	for _, want := range []string{
		`parameter "recordcount": is not a known parameter (did you mean "recordCount"?)`,
		`parameter "rate": got "fast", expected a number`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	// Conduit validates a config with Configure and Teardown only.
	_, err = src.Teardown(t.Context(), pconnector.SourceTeardownRequest{})
	is.NoErr(err)
}

func TestLifecycleCallsAnswerOK(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	// Without Configure, as when Conduit deletes a connector.
	dst := destination(t, host.Options{})
	_, err := dst.LifecycleOnCreated(ctx, pconnector.DestinationLifecycleOnCreatedRequest{Config: map[string]string{}})
	is.NoErr(err)
	_, err = dst.LifecycleOnUpdated(ctx, pconnector.DestinationLifecycleOnUpdatedRequest{ConfigBefore: map[string]string{"level": "info"}, ConfigAfter: map[string]string{"level": "warn"}})
	is.NoErr(err)
	_, err = dst.LifecycleOnDeleted(ctx, pconnector.DestinationLifecycleOnDeletedRequest{Config: map[string]string{"level": "nonsense"}})
	is.NoErr(err)
	_, err = dst.Teardown(ctx, pconnector.DestinationTeardownRequest{})
	is.NoErr(err)
}

func TestMaxReceiveSizeIsApplied(t *testing.T) {
	is := is.New(t)
	dst := destination(t, host.Options{MaxReceiveSize: 64 << 10})
	_, err := dst.Configure(t.Context(), pconnector.DestinationConfigureRequest{Config: map[string]string{"level": "trace"}})
	is.NoErr(err)
	small := runAndWrite(t, dst, opencdc.Record{Position: opencdc.Position("small"), Payload: opencdc.Change{After: opencdc.RawData(make([]byte, 1<<10))}})
	is.Equal(len(small), 1)
	is.Equal(small[0].Error, "")

	dst2 := destination(t, host.Options{MaxReceiveSize: 64 << 10})
	_, err = dst2.Configure(t.Context(), pconnector.DestinationConfigureRequest{Config: map[string]string{"level": "trace"}})
	is.NoErr(err)
	large := runAndWrite(t, dst2, opencdc.Record{Position: opencdc.Position("large"), Payload: opencdc.Change{After: opencdc.RawData(make([]byte, 128<<10))}})
	is.True(strings.Contains(large[0].Error, "larger than max")) // gRPC refused the message
}

// TestSourceLimitIsConduits: the record size limit Conduit gives a plugin
// reaches its connector (sdk.MaxRecordSize): the jsonl source sends the
// line within it and stops at the one beyond, naming the limit.
func TestSourceLimitIsConduits(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "in.jsonl")
	short := `{"id":1}` + "\n"
	is.NoErr(os.WriteFile(path, []byte(short+`{"s":"`+strings.Repeat("x", 1<<20)+`"}`+"\n"), 0o644))
	src := dispense(t, "connkit-jsonl", host.Options{MaxReceiveSize: 1 << 20}, (*host.Plugin).Source)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := src.Configure(ctx, pconnector.SourceConfigureRequest{Config: map[string]string{"path": path}})
	is.NoErr(err)
	_, err = src.Open(ctx, pconnector.SourceOpenRequest{})
	is.NoErr(err)
	stream := src.NewStream()
	is.NoErr(src.Run(ctx, stream))
	var got []opencdc.Record
	for {
		resp, err := stream.Client().Recv()
		if err != nil {
			is.True(strings.Contains(err.Error(), fmt.Sprintf("the line at offset %d exceeds the limit of %d bytes, the plugin's record size limit", len(short), 1<<20)))
			break
		}
		got = append(got, resp.Records...)
	}
	is.Equal(len(got), 1)
	is.Equal(string(got[0].Position), strconv.Itoa(len(short)))
	_, err = src.Teardown(ctx, pconnector.SourceTeardownRequest{})
	is.NoErr(err)
}

// TestPipelineOverTheProtocol runs generator → log through the host as both
// Conduit engines would, with and without batching.
func TestPipelineOverTheProtocol(t *testing.T) {
	const records = 2000
	for _, tt := range []struct {
		name           string
		perMessage     bool // Conduit's default engine; otherwise v2
		source, dest   map[string]string
		sourceMessages int64 // 0: not checked
		tls            bool  // the host asks for mutual TLS
	}{
		// The generator reads in batches of 1000, which travel as one message.
		{name: "default engine", perMessage: true, sourceMessages: records / 1000},
		{name: "default engine, destination batches of 100", perMessage: true,
			dest: map[string]string{"sdk.batch.size": "100"}},
		{name: "default engine, destination delay only", perMessage: true,
			dest: map[string]string{"sdk.batch.delay": "20ms"}},
		{name: "v2 engine, source batches of 250", perMessage: false,
			source: map[string]string{"sdk.batch.size": "250"}, sourceMessages: records / 250},
		{name: "v2 engine, source and destination batching", perMessage: false,
			source: map[string]string{"sdk.batch.size": "500", "sdk.batch.delay": "10ms"},
			dest:   map[string]string{"sdk.batch.size": "100", "sdk.batch.bytes": "1048576"}},
		// A host that asks for mutual TLS gets it in place of the plain
		// sockets Conduit's plugins are served on.
		{name: "v2 engine, mutual TLS", tls: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			leakcheck.Check(t)
			is := is.New(t)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			src := source(t, host.Options{MutualTLS: tt.tls})
			dst := destination(t, host.Options{MutualTLS: tt.tls})
			srcConfig := map[string]string{"format.options.id": "int", "recordCount": strconv.Itoa(records)}
			dstConfig := map[string]string{"level": "trace"}
			maps.Copy(srcConfig, tt.source)
			maps.Copy(dstConfig, tt.dest)
			openPipeline(t, ctx, src, dst, srcConfig, dstConfig)
			var acked []string
			res, err := host.Pipeline{Source: src, Destination: dst, Records: records, PerMessage: tt.perMessage,
				OnAck: func(p opencdc.Position) { acked = append(acked, string(p)) }}.Run(ctx)
			is.NoErr(err)
			is.Equal(res.Read, int64(records))
			is.Equal(res.Acked, int64(records))
			is.Equal(string(res.LastPosition), strconv.Itoa(records))
			for i, p := range acked {
				is.Equal(p, strconv.Itoa(i+1))
			}
			if tt.sourceMessages > 0 {
				is.Equal(res.SourceBatches, tt.sourceMessages)
			}
			// How many records each Write found waiting varies, and the
			// acks of short Writes in a row share a message (ackTogether).
			is.True(res.AckBatches >= 1 && res.AckBatches <= records)
		})
	}
}

// runFaulty launches the faulty plugin, configures and opens its
// destination and opens its Run stream, which stopRun ends.
func runFaulty(t *testing.T, ctx context.Context) (dst host.DestinationPlugin, stream pconnector.DestinationRunStream, stopRun context.CancelFunc) {
	t.Helper()
	is := is.New(t)
	p, err := host.Launch(faultyBin, host.Options{})
	is.NoErr(err)
	t.Cleanup(p.Kill)
	dst, err = p.Destination()
	is.NoErr(err)
	_, err = dst.Configure(ctx, pconnector.DestinationConfigureRequest{})
	is.NoErr(err)
	_, err = dst.Open(ctx, pconnector.DestinationOpenRequest{})
	is.NoErr(err)
	runCtx, stopRun := context.WithCancel(ctx)
	t.Cleanup(stopRun)
	stream = dst.NewStream()
	is.NoErr(dst.Run(runCtx, stream))
	return dst, stream, stopRun
}

// TestFaultyWritesAreNackedAndThePluginSurvives sends records that make the
// destination panic, fail and break the Write contract, each in a message of
// its own, and checks the acks and that the process keeps serving.
func TestFaultyWritesAreNackedAndThePluginSurvives(t *testing.T) {
	leakcheck.Check(t)
	is := is.New(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dst, stream, stopRun := runFaulty(t, ctx)

	messages := []struct {
		payloads []string
		want     []string // "" for a positive ack, else a substring of the nack
	}{
		{[]string{"ok", "panic", "ok"}, []string{"connector panicked in Write: asked to panic", "connector panicked in Write", "connector panicked in Write"}},
		// An unmarked error: the records after the failing one are nacked,
		// each saying which record failed.
		{[]string{"ok", "fail", "ok"}, []string{"", `record at position "5": asked to fail`, `not attempted: the record at position "5" failed: asked to fail`}},
		{[]string{"ok", "ok", "short"}, []string{"", "", "wrote 2 of 3 records but returned no error"}},
		// sdk.RecordFault: only that record is nacked; sdk.Retryable: the
		// record is written again (sdk.retry.* defaults).
		{[]string{"ok", "fault", "ok"}, []string{"", `record at position "11": asked to fault`, ""}},
		{[]string{"ok", "flaky", "ok"}, []string{"", "", ""}},
		{[]string{"ok"}, []string{""}},
	}
	pos := 0
	for _, m := range messages {
		batch := make([]opencdc.Record, len(m.payloads))
		for i, payload := range m.payloads {
			pos++
			batch[i] = opencdc.Record{Position: opencdc.Position(strconv.Itoa(pos)), Payload: opencdc.Change{After: opencdc.RawData(payload)}}
		}
		is.NoErr(stream.Client().Send(pconnector.DestinationRunRequest{Records: batch}))
		var acks []pconnector.DestinationRunResponseAck // a retry sends what was written first
		for len(acks) < len(batch) {
			resp, err := stream.Client().Recv()
			is.NoErr(err) // the plugin is still serving
			acks = append(acks, resp.Acks...)
		}
		is.Equal(len(acks), len(batch))
		for i, a := range acks {
			is.Equal(string(a.Position), string(batch[i].Position))
			if m.want[i] == "" {
				is.Equal(a.Error, "")
			} else if !strings.Contains(a.Error, m.want[i]) {
				t.Errorf("ack %s: %q does not contain %q", a.Position, a.Error, m.want[i])
			}
		}
	}
	_, err := dst.Stop(ctx, pconnector.DestinationStopRequest{LastPosition: opencdc.Position(strconv.Itoa(pos))})
	is.NoErr(err)
	stopRun()
	_, err = dst.Teardown(ctx, pconnector.DestinationTeardownRequest{})
	is.NoErr(err)
}

// TestReadingStopsAtTheBound sends records to a destination whose Write
// never returns, as fast as the stream takes them: the plugin holds at most
// its bound (two batches of sdk.batch.bytes, about 7.5 MiB) plus gRPC's
// 64 KiB windows, so the host can send no more than about a thousand 8 KiB
// records, however long it tries. Before, 8 MiB windows let another
// thousand pile up.
func TestReadingStopsAtTheBound(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dst, stream, stopRun := runFaulty(t, ctx)

	const total = 10000
	payload := opencdc.RawData(strings.Repeat("x", 8<<10))
	var sent atomic.Int64
	go func() {
		for i := 1; i <= total; i++ {
			r := opencdc.Record{Position: opencdc.Position(strconv.Itoa(i)), Payload: opencdc.Change{After: payload}}
			if i == 1 {
				r.Payload.After = opencdc.RawData("block")
			}
			if stream.Client().Send(pconnector.DestinationRunRequest{Records: []opencdc.Record{r}}) != nil {
				return
			}
			sent.Add(1)
		}
	}()
	// Wait until sending stalls: the count stays put for a second.
	last := int64(-1)
	for sent.Load() != last {
		last = sent.Load()
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	t.Logf("the host could send %d records of 8 KiB", last)
	if last > 1500 {
		t.Errorf("the plugin took %d records of 8 KiB while its connector wrote none: reading does not stop at the bound", last)
	}
	stopRun()
	_, err := dst.Teardown(ctx, pconnector.DestinationTeardownRequest{})
	is.NoErr(err)
}
