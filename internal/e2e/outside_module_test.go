package e2e

import (
	"encoding/csv"
	"go/format"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// docFiles returns the code blocks of doc whose info string names a file
// (```go file=main.go), by file name.
func docFiles(doc string) map[string]string {
	files := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)```\\w+ file=(\\S+)\n(.*?)```").FindAllStringSubmatch(doc, -1) {
		files[m[1]] = m[2]
	}
	return files
}

// docCommands returns the commands of doc's sh blocks, in order,
// without comments, a command continued with a backslash on one line.
func docCommands(doc string) []string {
	var cmds []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(doc, -1) {
		for line := range strings.SplitSeq(strings.ReplaceAll(m[1], "\\\n", " "), "\n") {
			line, _, _ = strings.Cut(line, "#")
			if line = strings.TrimSpace(line); line != "" {
				cmds = append(cmds, line)
			}
		}
	}
	return cmds
}

// TestOutsideModule follows WRITING.md, writing a connector by hand, as an
// author outside this repository would: its files in a module of their
// own that requires connkit through a replace directive pointing at this
// checkout, its commands in order (go mod tidy, go vet, the sdktest test,
// go build into connectors/), and then Conduit started there with its
// pipeline from the builtin generator into the plugin. Its Conduit command
// must name the binary make builds and flags that Conduit has, keeping its
// APIs on loopback; the test runs that Conduit with the same layout, on
// free loopback ports. It checks that every generated record is a row of
// the CSV file, decoded from Avro into typed fields, and acknowledged
// once. The checkout is only read.
func TestOutsideModule(t *testing.T) {
	conduitPath := conduitBin(t)
	is := is.New(t)
	root, err := filepath.Abs("../..")
	is.NoErr(err)
	doc := string(readDoc(t, "WRITING.md"))
	files := docFiles(doc)
	names := slices.Sorted(maps.Keys(files))
	if want := []string{"csvsink_test.go", "main.go", "pipelines/csvsink.yaml"}; !slices.Equal(names, want) {
		t.Fatalf("WRITING.md's code blocks name the files %v, want %v", names, want)
	}

	for name, content := range files {
		if strings.HasSuffix(name, ".go") {
			formatted, err := format.Source([]byte(content))
			if err != nil || string(formatted) != content {
				t.Errorf("WRITING.md's %s is not as gofmt formats it (%v):\n%s", name, err, formatted)
			}
		}
	}

	dir := filepath.Join(t.TempDir(), "csvsink")
	for name, content := range files {
		path := filepath.Join(dir, name)
		is.NoErr(os.MkdirAll(filepath.Dir(path), 0o755))
		is.NoErr(os.WriteFile(path, []byte(content), 0o644))
	}
	// The checkout's go.sum has the sums of every module connkit needs, so
	// go mod tidy does not have to ask the checksum database for them.
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	is.NoErr(err)
	is.NoErr(os.WriteFile(filepath.Join(dir, "go.sum"), sums, 0o644))

	goEnv := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GONOSUMDB=github.com/conduitio,buf.build")
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	is.NoErr(err)
	version := regexp.MustCompile(`(?m)^CONDUIT_VERSION\s*:?=\s*(\S+)$`).FindSubmatch(makefile)
	is.True(version != nil)                                        // the Makefile names Conduit's version
	conduitCmd := "~/.cache/connkit/conduit-" + string(version[1]) // where make conduit builds it
	var conduitArgs []string
	for _, line := range docCommands(doc) {
		args := strings.Fields(line)
		switch {
		case args[0] == "mkdir" || args[0] == "cd":
			// The test made the directory.
		case strings.HasPrefix(line, "go mod edit -replace github.com/connkit/connkit="):
			args[len(args)-1] = "github.com/connkit/connkit=" + root
			fallthrough
		case args[0] == "go":
			cmd := exec.CommandContext(t.Context(), "go", args[1:]...)
			cmd.Dir, cmd.Env = dir, goEnv
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s (in %s): %v\n%s", strings.Join(cmd.Args, " "), dir, err, out)
			}
		case args[0] == conduitCmd:
			conduitArgs = args[1:]
		default:
			t.Fatalf("WRITING.md shows a command this test does not know how to follow: %s", line)
		}
	}
	checkConduitArgs(t, conduitPath, conduitArgs)
	_, err = os.Stat(filepath.Join(dir, "connectors", "csvsink"))
	is.NoErr(err) // the plugin is in Conduit's connectors directory

	pipeline := files["pipelines/csvsink.yaml"]
	setting := func(re string) string {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(pipeline)
		if m == nil {
			t.Fatalf("WRITING.md's pipeline file does not match %s", re)
		}
		return m[1]
	}
	id := setting(`(?m)^  - id: (\S+)$`)
	records, err := strconv.Atoi(setting(`(?m)^\s+recordCount: "(\d+)"$`))
	is.NoErr(err)
	csvPath := filepath.Join(dir, setting(`(?m)^\s+path: (\S+)$`))
	columns := strings.Split(setting(`(?m)^\s+columns: (\S+)$`), ",")
	is.True(strings.Contains(pipeline, "plugin: builtin:generator"))
	is.True(strings.Contains(pipeline, "plugin: standalone:csvsink"))

	c := runConduit(t, conduitPath, dir)
	c.waitForPipelineAcked(id, records)
	is.Equal(c.executions(id), float64(records)) // exactly: no record twice

	f, err := os.Open(csvPath)
	is.NoErr(err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	is.NoErr(err)
	is.Equal(len(rows), records) // a row per record
	for i, row := range rows {
		// The generator's int field arrives as a number, not Avro bytes:
		// connkit decoded the payload with its schema before Write.
		if _, err := strconv.ParseInt(row[1], 10, 64); len(row) != 1+len(columns) || row[0] != "create" || err != nil || row[2] == "" {
			t.Fatalf("row %d of %s is %q, want a create with an integer id and a name", i+1, csvPath, row)
		}
	}
	c.checkRunning(id)
	c.stop()

	// WRITING.md says Conduit warns that the generator's keys are not
	// structured; anything else is a problem.
	var problems []string
	for _, p := range c.Problems() {
		if !strings.Contains(p, "not structured") || !strings.Contains(p, `"plugin_name":"builtin:generator"`) {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		t.Errorf("Conduit logged problems:\n%s", strings.Join(problems, "\n"))
	}
}

// checkConduitArgs checks WRITING.md's arguments for the Conduit binary:
// `run` with the layout runConduit gives Conduit (connectors/ and
// pipelines/ in its working directory), and its HTTP and gRPC APIs on
// loopback addresses, with flags Conduit's own help lists.
func checkConduitArgs(t *testing.T, conduitPath string, args []string) {
	t.Helper()
	if len(args) == 0 || args[0] != "run" || len(args)%2 != 1 {
		t.Fatalf("WRITING.md runs Conduit with %q, want run and flags with values", args)
	}
	help, err := exec.CommandContext(t.Context(), conduitPath, "run", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("%s run --help: %v\n%s", conduitPath, err, help)
	}
	flags := map[string]string{}
	for i := 1; i < len(args); i += 2 {
		if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(args[i]) + `\s`).Match(help) {
			t.Errorf("WRITING.md passes Conduit %s, which `conduit run --help` does not list", args[i])
		}
		flags[args[i]] = args[i+1]
	}
	want := map[string]string{"--connectors.path": "./connectors", "--pipelines.path": "./pipelines"}
	for _, api := range []string{"--api.http.address", "--api.grpc.address"} {
		host, _, err := net.SplitHostPort(flags[api])
		if err != nil || !net.ParseIP(host).IsLoopback() {
			t.Errorf("WRITING.md's Conduit has %s %q, want a loopback address", api, flags[api])
		}
		want[api] = flags[api]
	}
	if !maps.Equal(flags, want) {
		t.Errorf("WRITING.md runs Conduit with flags %v, want %v", flags, want)
	}
}
