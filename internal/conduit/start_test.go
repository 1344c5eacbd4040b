package conduit

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// fakeConduitEnv, set, makes the test binary play Conduit: `run` with the
// flags Start passes. With the value "listen" it listens on the HTTP
// address it is given, logs it as Conduit does and serves until killed;
// with "clash" it exits as Conduit does when that address is taken.
const fakeConduitEnv = "CONNKIT_TEST_FAKE_CONDUIT"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeConduitEnv); mode != "" {
		os.Exit(fakeConduit(mode, os.Args[2:]))
	}
	os.Exit(m.Run())
}

func fakeConduit(mode string, args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	httpAddr := fs.String("api.http.address", "", "")
	fs.String("api.grpc.address", "", "")
	fs.String("config.path", "", "")
	fs.String("connectors.path", "", "")
	fs.String("processors.path", "", "")
	fs.String("pipelines.path", "", "")
	fs.String("db.type", "", "")
	fs.String("log.format", "", "")
	fs.Bool("pipelines.exit-on-degraded", false, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if mode == "clash" {
		fmt.Printf(`{"level":"fatal","error":"listen tcp %s: bind: address already in use","message":"conduit failed"}`+"\n", *httpAddr)
		return 1
	}
	l, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Printf(`{"level":"info","address":%q,"message":"http API started"}`+"\n", l.Addr())
	_ = http.Serve(l, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	return 1
}

func startFake(t *testing.T, mode, dir string) (*Server, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeConduitEnv, mode)
	s, err := Start(Options{Bin: self, Dir: dir})
	if s != nil {
		t.Cleanup(s.Kill)
	}
	return s, err
}

// Conduit picks its own ports, and Start finds its API where Conduit says
// it listens. Every run in a directory keeps its own log.
func TestStartOnPortsConduitPicks(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	var logs []string
	for range 2 {
		s, err := startFake(t, "listen", dir)
		is.NoErr(err)
		is.True(!strings.HasSuffix(s.URL, ":0"))
		resp, err := http.Get(s.URL)
		is.NoErr(err)
		resp.Body.Close()
		logs = append(logs, s.LogPath)
		s.Kill()
	}
	is.Equal(logs, []string{filepath.Join(dir, "conduit.log"), filepath.Join(dir, "conduit-2.log")})
	for _, l := range logs {
		b, err := os.ReadFile(l)
		is.NoErr(err)
		is.True(strings.Contains(string(b), `"http API started"`)) // each run's own log, whole
	}
}

// A Conduit that exits before its API starts is an error that carries its
// log; Start does not try again on the state it already used.
func TestStartFailsWithTheLog(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	_, err := startFake(t, "clash", dir)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "before its HTTP API started"))
	is.True(strings.Contains(err.Error(), "address already in use"))
	entries, err := os.ReadDir(dir)
	is.NoErr(err)
	var logs int
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			logs++
		}
	}
	is.Equal(logs, 1) // one run, no retry
}
