package sdktest

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	clientv2 "github.com/conduitio/conduit-connector-protocol/pconnector/v2/client"
	"github.com/connkit/connkit/internal/host"
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

// inProcess serves the connector from this process over gRPC, through an
// sdk.Server, which runs the plugin server a plugin binary runs: fast,
// and debuggable with the test.
type inProcess struct {
	c sdk.Connector
	// wrap, if set, wraps each destination the connector builds, inside
	// the layer that records Writes: the kit injects faults with it.
	wrap func(sdk.Destination) sdk.Destination
}

func (inProcess) name() string { return "InProcess" }

// serve serves c from a fresh sdk.Server until the test ends and returns a
// connection to it.
func (inProcess) serve(t tb, c sdk.Connector) *grpc.ClientConn {
	t.Helper()
	conn, stop, err := connect(c, slog.New(slog.NewTextHandler(newTestLog(t), &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatalf("serve the Connector in process: %v", err)
	}
	t.Cleanup(stop)
	return conn
}

// connect serves c from a fresh sdk.Server, logging to log, on an
// in-memory listener, and returns a connection to it and what closes
// both.
func connect(c sdk.Connector, log *slog.Logger) (conn *grpc.ClientConn, stop func(), err error) {
	srv, err := sdk.NewServer(c, sdk.ServerLogger(log))
	if err != nil {
		return nil, nil, err
	}
	lis := bufconn.Listen(1 << 20)
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(lis) }()
	conn, err = grpc.NewClient("passthrough:///sdktest",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		srv.Stop()
		<-served
		return nil, nil, err
	}
	return conn, func() {
		_ = conn.Close()
		srv.Stop()
		<-served
	}, nil
}

func (r inProcess) source(t tb) host.SourceClient {
	t.Helper()
	return clientv2.NewSourcePluginClient(r.serve(t, r.c))
}

// destination serves a copy of the Connector whose every destination is
// wrapped, if wrap is set, and recorded in the log it returns.
func (r inProcess) destination(t tb) (host.DestinationClient, *writeLog) {
	t.Helper()
	log := newWriteLog(r.c)
	c := r.c
	c.Destination = c.Destination.Wrap(func(d sdk.Destination) sdk.Destination {
		if r.wrap != nil {
			d = r.wrap(d)
		}
		return log.observe(d)
	})
	return clientv2.NewDestinationPluginClient(r.serve(t, c)), log
}

func (r inProcess) specifier(t tb) pconnector.SpecifierPlugin {
	return clientv2.NewSpecifierPluginClient(r.serve(t, r.c))
}

// writeLog records how the plugin server called the connector's Write.
type writeLog struct {
	mu sync.Mutex
	// What the destination takes, as the SDK finds it: concurrent Writes,
	// if it is an sdk.ConcurrentDestination, and then, unless it splits
	// freely, none running together with records of one key.
	concurrentDestination, byKey bool
	limit                        string // sdk.write.concurrency: its default, then as configured

	sizes      []int
	running    int
	concurrent bool           // Writes ran together
	keys       map[string]int // with byKey, the keys of the Writes running, and how many records have each
	sharedKey  string         // a key two Writes running together had, with byKey
}

// newWriteLog returns the log of a destination of c.
func newWriteLog(c sdk.Connector) *writeLog {
	l := &writeLog{}
	spec, _ := c.Specification() // serving c reports its error
	for _, p := range spec.DestinationParameters {
		if p.Name == writeConcurrency {
			l.limit = p.Default
		}
	}
	return l
}

// writeConcurrency is the parameter that bounds a concurrent
// destination's Writes in flight.
const writeConcurrency = "sdk.write.concurrency"

// configured notes the configuration the destination is configured with.
func (l *writeLog) configured(cfg map[string]string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if v, ok := cfg[writeConcurrency]; ok {
		l.limit = v
	}
}

// oneAtATime reports whether the destination, as configured, takes one
// Write at a time: it is not an sdk.ConcurrentDestination, or
// sdk.write.concurrency is 1.
func (l *writeLog) oneAtATime() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := strconv.Atoi(l.limit)
	return !l.concurrentDestination || (err == nil && n <= 1)
}

func (l *writeLog) calls() (sizes []int, concurrent bool, sharedKey string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.sizes...), l.concurrent, l.sharedKey
}

// observe returns d, its Writes recorded, and notes what it takes, as the
// SDK finds it through the layers' Unwrap methods.
func (l *writeLog) observe(d sdk.Destination) sdk.Destination {
	o := observed{Destination: d, log: l}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := concurrentOf(o); ok {
		l.concurrentDestination, l.byKey = true, c.WriteSplit() != sdk.SplitFreely
	}
	return o
}

// concurrentOf returns the sdk.ConcurrentDestination that d is or wraps,
// as the SDK finds it, outermost first.
func concurrentOf(d sdk.Destination) (sdk.ConcurrentDestination, bool) {
	for d != nil {
		if c, ok := d.(sdk.ConcurrentDestination); ok {
			return c, true
		}
		u, ok := d.(interface{ Unwrap() sdk.Destination })
		if !ok {
			break
		}
		d = u.Unwrap()
	}
	return nil, false
}

// observed is a destination whose Writes are recorded in log.
type observed struct {
	sdk.Destination
	log *writeLog
}

func (o observed) Write(ctx context.Context, records []opencdc.Record) (int, error) {
	l := o.log
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
	return o.Destination.Write(ctx, records)
}

// Unwrap returns the destination observed, where the SDK finds what it
// implements besides.
func (o observed) Unwrap() sdk.Destination { return o.Destination }

// lockedTakeKeys notes the keys of records as the keys of a Write
// running, with byKey, noting one that another Write running has too, and
// returns them.
func (l *writeLog) lockedTakeKeys(records []opencdc.Record) []string {
	if !l.byKey {
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
