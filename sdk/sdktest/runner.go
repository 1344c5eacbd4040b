package sdktest

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	clientv2 "github.com/conduitio/conduit-connector-protocol/pconnector/v2/client"
	"github.com/connkit/connkit/internal/host"
	"github.com/connkit/connkit/internal/plugin"
	"github.com/connkit/connkit/sdk"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
)

// runner starts connector instances for the checks, each in a fresh plugin
// server (as Conduit starts a plugin process per connector), torn down when
// the check ends.
type runner interface {
	name() string
	source(t tb) host.SourceClient
	// destination returns the destination and, in process, the log of the
	// connector's Write calls.
	destination(t tb) (host.DestinationClient, *writeLog)
	specifier(t tb) pconnector.SpecifierPlugin
}

// inProcess serves the connector from this process over gRPC, through the
// same plugin server a plugin binary runs: fast, and debuggable with the
// test.
type inProcess struct {
	c sdk.Connector
	// wrap, if set, wraps the Write of each configured destination, inside
	// the layer that records Writes: the kit injects faults with it.
	wrap func(sdk.Destination) sdk.Destination
}

func (inProcess) name() string { return "InProcess" }

func (r inProcess) serve(t tb, pc plugin.Factory) *grpc.ClientConn {
	t.Helper()
	log := slog.New(slog.NewTextHandler(newTestLog(t), &slog.HandlerOptions{Level: slog.LevelWarn}))
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer(plugin.ServerOptions(plugin.Settings{LogLevel: slog.LevelWarn, MaxReceiveSize: plugin.DefaultMaxReceiveSize}, log)...)
	plugin.Register(s, pc, log)
	served := make(chan struct{})
	go func() { defer close(served); _ = s.Serve(lis) }()
	conn, err := grpc.NewClient("passthrough:///sdktest",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		s.Stop()
		<-served
		t.Fatalf("connect to the in-process plugin server: %v", err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		s.Stop()
		<-served
	})
	return conn
}

// server returns what the plugin server serves for c, as a plugin binary
// built from c does.
func server(t tb, c sdk.Connector) plugin.Factory {
	t.Helper()
	pc, err := plugin.ConnectorOf(c)
	if err != nil {
		t.Fatalf("the Connector is not valid: %v", err)
	}
	return pc
}

func (r inProcess) source(t tb) host.SourceClient {
	t.Helper()
	return clientv2.NewSourcePluginClient(r.serve(t, server(t, r.c)))
}

func (r inProcess) destination(t tb) (host.DestinationClient, *writeLog) {
	t.Helper()
	log := &writeLog{}
	pc := observed{Factory: server(t, r.c), wrap: r.wrap, log: log}
	return clientv2.NewDestinationPluginClient(r.serve(t, pc)), log
}

// observed is a connector whose destination's Writes are wrapped, if wrap
// is set, and recorded in log.
type observed struct {
	plugin.Factory
	wrap func(sdk.Destination) sdk.Destination
	log  *writeLog
}

func (o observed) ConfigureDestination(raw map[string]string) (plugin.Destination, error) {
	d, err := o.Factory.ConfigureDestination(raw)
	o.log.mu.Lock()
	o.log.concurrency = d.Concurrency
	o.log.mu.Unlock()
	if o.wrap != nil {
		d.Write = o.wrap(writer(d.Write)).Write
	}
	d.Write = o.log.observe(d.Write)
	return d, err
}

func (r inProcess) specifier(t tb) pconnector.SpecifierPlugin {
	return clientv2.NewSpecifierPluginClient(r.serve(t, server(t, r.c)))
}

// writer is a destination's Write as a destination, for the kit's
// wrappers, which call only its Write.
type writer func(context.Context, []opencdc.Record) (int, error)

func (w writer) Open(context.Context) error     { return nil }
func (w writer) Teardown(context.Context) error { return nil }
func (w writer) Write(ctx context.Context, records []opencdc.Record) (int, error) {
	return w(ctx, records)
}

// writeLog records how the plugin server called the connector's Write.
type writeLog struct {
	mu          sync.Mutex
	concurrency plugin.Concurrency // what the destination allows
	sizes       []int
	running     int
	concurrent  bool           // Writes ran together
	keys        map[string]int // with ByKey, the keys of the Writes running, and how many records have each
	sharedKey   string         // a key two Writes running together had, with ByKey
}

func (l *writeLog) calls() (sizes []int, concurrent bool, sharedKey string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.sizes...), l.concurrent, l.sharedKey
}

// observe returns write, recording every call.
func (l *writeLog) observe(write func(context.Context, []opencdc.Record) (int, error)) func(context.Context, []opencdc.Record) (int, error) {
	return func(ctx context.Context, records []opencdc.Record) (int, error) {
		l.mu.Lock()
		l.running++
		l.concurrent = l.concurrent || l.running > 1
		l.sizes = append(l.sizes, len(records))
		keys := l.lockedTakeKeys(records)
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			l.running--
			for _, k := range keys {
				if l.keys[k]--; l.keys[k] == 0 {
					delete(l.keys, k)
				}
			}
			l.mu.Unlock()
		}()
		return write(ctx, records)
	}
}

// lockedTakeKeys notes the keys of records as the keys of a Write
// running, with ByKey, noting one that another Write running has too, and
// returns them.
func (l *writeLog) lockedTakeKeys(records []opencdc.Record) []string {
	if !l.concurrency.ByKey {
		return nil
	}
	if l.keys == nil {
		l.keys = map[string]int{}
	}
	var keys []string
	for _, r := range records {
		if r.Key == nil || len(r.Key.Bytes()) == 0 {
			continue
		}
		keys = append(keys, string(r.Key.Bytes()))
	}
	for _, k := range keys {
		if l.keys[k] > 0 {
			l.sharedKey = k
		}
	}
	for _, k := range keys {
		l.keys[k]++
	}
	return keys
}

// outOfProcess launches the plugin binary for every instance and drives it
// over the protocol with the protocol's own client, as Conduit does.
type outOfProcess struct{ binary string }

func (outOfProcess) name() string { return "Plugin" }

func (r outOfProcess) launch(t tb) *host.Plugin {
	t.Helper()
	p, err := host.Launch(r.binary, host.Options{ConnectorID: "sdktest", LogLevel: "warn", HostLogLevel: "warn", Log: newTestLog(t)})
	if err != nil {
		t.Fatalf("launch the plugin %s: %v", r.binary, err)
	}
	t.Cleanup(p.Kill)
	return p
}

func (r outOfProcess) source(t tb) host.SourceClient {
	t.Helper()
	_, src := r.launchSource(t)
	return src
}

func (r outOfProcess) destination(t tb) (host.DestinationClient, *writeLog) {
	t.Helper()
	_, dst := r.launchDestination(t)
	return dst, nil
}

// launchSource returns the source of a freshly launched plugin process,
// and the process, for the crash check to kill.
func (r outOfProcess) launchSource(t tb) (*host.Plugin, host.SourceClient) {
	return dispense(t, r, "source", (*host.Plugin).Source)
}

// launchDestination is launchSource for a destination.
func (r outOfProcess) launchDestination(t tb) (*host.Plugin, host.DestinationClient) {
	return dispense(t, r, "destination", (*host.Plugin).Destination)
}

// dispense launches the plugin and returns what get dispenses from it,
// the role named what, and the process.
func dispense[C any](t tb, r outOfProcess, what string, get func(*host.Plugin) (C, error)) (*host.Plugin, C) {
	t.Helper()
	p := r.launch(t)
	c, err := get(p)
	if err != nil {
		t.Fatalf("plugin %s: dispense the %s: %v", r.binary, what, err)
	}
	return p, c
}

func (r outOfProcess) specifier(t tb) pconnector.SpecifierPlugin {
	t.Helper()
	s, err := r.launch(t).Specifier()
	if err != nil {
		t.Fatalf("plugin %s: dispense the specifier: %v", r.binary, err)
	}
	return s
}

// buildPlugin returns the plugin binary for plugin: plugin itself if it is
// a file, else the binary go build makes of the main package it names.
func buildPlugin(t tb, pluginPath string) string {
	t.Helper()
	if fi, err := os.Stat(pluginPath); err == nil && !fi.IsDir() {
		abs, _ := filepath.Abs(pluginPath)
		return abs
	}
	bin := filepath.Join(t.TempDir(), "plugin")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, pluginPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s (the suite's Plugin): %v\n%s", pluginPath, err, out)
	}
	return bin
}

// Plugin returns what a suite's Plugin field should be for a plugin built
// into $CONNKIT_BIN (as make test does) or, without it, built by the suite
// from the main package pkg.
func Plugin(binary, pkg string) string {
	if dir := os.Getenv("CONNKIT_BIN"); dir != "" {
		if p := filepath.Join(dir, binary); fileExists(p) {
			return p
		}
	}
	return pkg
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// testLog passes log lines to the test's log until the test ends.
type testLog struct {
	mu   sync.Mutex
	t    tb
	done bool
}

func newTestLog(t tb) *testLog {
	l := &testLog{t: t}
	t.Cleanup(func() {
		l.mu.Lock()
		l.done = true
		l.mu.Unlock()
	})
	return l
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Logf("connector: %s", strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}
