package e2e

import (
	"encoding/csv"
	"go/format"
	"maps"
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

// readmeSection returns the README's section under heading, up to the next
// heading of the same level.
func readmeSection(t *testing.T, readme []byte, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(string(readme), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", heading)
	}
	section, _, _ := strings.Cut(rest, "\n## ")
	return section
}

// readmeFiles returns the code blocks of section whose info string names a
// file (```go file=main.go), by file name.
func readmeFiles(section string) map[string]string {
	files := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)```\\w+ file=(\\S+)\n(.*?)```").FindAllStringSubmatch(section, -1) {
		files[m[1]] = m[2]
	}
	return files
}

// readmeCommands returns the lines of section's sh blocks, in order,
// without comments.
func readmeCommands(section string) []string {
	var cmds []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		for line := range strings.SplitSeq(m[1], "\n") {
			line, _, _ = strings.Cut(line, "#")
			if line = strings.TrimSpace(line); line != "" {
				cmds = append(cmds, line)
			}
		}
	}
	return cmds
}

// TestOutsideModule follows README's "Your own connector" as an author
// outside this repository would: the README's files in a module of their
// own that requires connkit through a replace directive pointing at this
// checkout, the README's commands in order (go mod tidy, go vet, the
// sdktest test, go build into connectors/), and then Conduit started there
// with the README's pipeline from the builtin generator into the plugin.
// It checks that every generated record is a row of the CSV file, decoded
// from Avro into typed fields, and acknowledged once. The checkout is only
// read.
func TestOutsideModule(t *testing.T) {
	conduitPath := conduitBin(t)
	is := is.New(t)
	root, err := filepath.Abs("../..")
	is.NoErr(err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	is.NoErr(err)
	section := readmeSection(t, readme, "## Your own connector")
	files := readmeFiles(section)
	names := slices.Sorted(maps.Keys(files))
	if want := []string{"csvsink_test.go", "main.go", "pipelines/csvsink.yaml"}; !slices.Equal(names, want) {
		t.Fatalf("the section's code blocks name the files %v, want %v", names, want)
	}

	for name, content := range files {
		if strings.HasSuffix(name, ".go") {
			formatted, err := format.Source([]byte(content))
			if err != nil || string(formatted) != content {
				t.Errorf("the README's %s is not as gofmt formats it (%v):\n%s", name, err, formatted)
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
	var conduitArgs []string
	for _, line := range readmeCommands(section) {
		args := strings.Fields(line)
		switch {
		case args[0] == "mkdir" || args[0] == "cd":
			// The test made the directory.
		case strings.HasPrefix(line, "go get github.com/connkit/connkit@"):
			// Not published yet: the replace directive stands for it.
		case strings.HasPrefix(line, "go mod edit -replace github.com/connkit/connkit="):
			args[len(args)-1] = "github.com/connkit/connkit=" + root
			fallthrough
		case args[0] == "go":
			cmd := exec.CommandContext(t.Context(), "go", args[1:]...)
			cmd.Dir, cmd.Env = dir, goEnv
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s (in %s): %v\n%s", strings.Join(cmd.Args, " "), dir, err, out)
			}
		case args[0] == "conduit":
			conduitArgs = args[1:]
		default:
			t.Fatalf("the README shows a command this test does not know how to follow: %s", line)
		}
	}
	is.Equal(conduitArgs, []string{"run", "--connectors.path", "./connectors", "--pipelines.path", "./pipelines"}) // runConduit's layout
	_, err = os.Stat(filepath.Join(dir, "connectors", "csvsink"))
	is.NoErr(err) // the plugin is in Conduit's connectors directory

	pipeline := files["pipelines/csvsink.yaml"]
	setting := func(re string) string {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(pipeline)
		if m == nil {
			t.Fatalf("the README's pipeline file does not match %s", re)
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
	is.Equal(c.Metric(`conduit_pipeline_execution_duration_seconds_count{pipeline_name="`+id+`"}`), float64(records)) // exactly: no record twice

	f, err := os.Open(csvPath)
	is.NoErr(err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	is.NoErr(err)
	is.Equal(len(rows), 1+records) // a header and a row per record
	is.Equal(rows[0], append([]string{"operation"}, columns...))
	for i, row := range rows[1:] {
		// The generator's int field arrives as a number, not Avro bytes:
		// connkit decoded the payload with its schema before Write.
		if _, err := strconv.ParseInt(row[1], 10, 64); row[0] != "create" || err != nil || row[2] == "" {
			t.Fatalf("row %d of %s is %q, want a create with an integer id and a name", i+1, csvPath, row)
		}
	}
	c.checkRunning(id)
	c.stop()

	// The README says Conduit warns that the generator's keys are not
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
