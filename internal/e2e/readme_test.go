package e2e

import (
	"context"
	"flag"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/host"
	"github.com/matryer/is"
)

// goBlock matches a Go code block of a Markdown file.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// readDoc returns the contents of the repository's file name, such as
// README.md.
func readDoc(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testdataPackage writes code into the file name of a new directory in
// testdata and returns the directory, as a relative package path (./…).
// testdata is inside the module, so the code builds against this checkout,
// and ./... ignores it.
func testdataPackage(t *testing.T, prefix, name string, code []byte) string {
	t.Helper()
	dir, err := os.MkdirTemp("testdata", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, name), code, 0o644); err != nil {
		t.Fatal(err)
	}
	return "./" + dir
}

// TestReadmeConnector builds the connector README shows and runs it over the
// protocol, so the README cannot drift from the API; and it counts its
// lines as README does.
func TestReadmeConnector(t *testing.T) {
	is := is.New(t)
	readme := readDoc(t, "README.md")
	block := goBlock.FindSubmatch(readme)
	is.True(block != nil)
	said := regexp.MustCompile(`(\d+) lines\s+besides the imports`).FindSubmatch(readme)
	is.True(said != nil)
	if got := linesBesidesImports(t, block[1]); string(said[1]) != strconv.Itoa(got) {
		t.Errorf("README says its connector is %s lines besides the imports; it is %d", said[1], got)
	}
	bin := filepath.Join(t.TempDir(), "printer")
	out, err := exec.Command("go", "build", "-o", bin, testdataPackage(t, "readme-", "main.go", block[1])).CombinedOutput()
	if err != nil {
		t.Fatalf("README's connector does not build: %v\n%s", err, out)
	}

	p, err := host.Launch(bin, host.Options{})
	is.NoErr(err)
	defer p.Kill()
	dst, err := p.Destination()
	is.NoErr(err)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err = dst.Configure(ctx, pconnector.DestinationConfigureRequest{Config: map[string]string{"prefx": "#"}})
	is.True(err != nil)
	is.True(regexp.MustCompile(`parameter "prefx": is not a known parameter \(did you mean "prefix"\?\)`).MatchString(err.Error()))
	_, err = dst.Configure(ctx, pconnector.DestinationConfigureRequest{Config: map[string]string{"prefix": "#"}})
	is.NoErr(err)
	acks := runAndWrite(t, dst, opencdc.Record{Position: opencdc.Position("42")})
	is.Equal(len(acks), 1)
	is.Equal(string(acks[0].Position), "42")
	is.Equal(acks[0].Error, "")
}

// linesBesidesImports returns how many lines of the Go file src hold code
// (see codeLines), those of its imports left out.
func linesBesidesImports(t *testing.T, src []byte) int {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	lines := codeLinesOf(src)
	for _, d := range f.Decls {
		for l := fset.Position(d.Pos()).Line; l <= fset.Position(d.End()).Line; l++ {
			delete(lines, l)
		}
	}
	return len(lines)
}

// TestReadmeCommands checks that the commands README opens with are make
// targets, and that the section on the reference pipeline shows the
// pipeline file and the table the pipeline command uses.
func TestReadmeCommands(t *testing.T) {
	is := is.New(t)
	readme, makefile := readDoc(t, "README.md"), readDoc(t, "Makefile")

	commands := regexp.MustCompile("(?s)```sh\n(.*?)```").FindSubmatch(readme)
	is.True(commands != nil)
	var targets []string
	for _, m := range regexp.MustCompile(`(?m)^make (\S+) +# `).FindAllSubmatch(commands[1], -1) {
		target := string(m[1])
		targets = append(targets, target)
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).Match(makefile) {
			t.Errorf("README's make %s is not a target in Makefile", target)
		}
	}
	is.Equal(targets, []string{"pipeline", "test"})
	is.True(regexp.MustCompile(`(?m)^pipeline:.*\n\t\$\(GO\) run \./internal/cmd/pipeline `).Match(makefile)) // make pipeline runs real Conduit

	section := regexp.MustCompile("(?s)\n## The reference pipeline\n(.*?)\n## ").FindSubmatch(readme)
	is.True(section != nil)
	yaml := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(section[1])
	is.True(yaml != nil)
	file, err := os.ReadFile("../cmd/pipeline/pipeline.yaml")
	is.NoErr(err)
	if string(yaml[1]) != string(file) {
		t.Errorf("README's pipeline file is not internal/cmd/pipeline/pipeline.yaml:\n%s", yaml[1])
	}
	sql := regexp.MustCompile("(?s)```sql\n(.*?)\n```").FindSubmatch(section[1])
	is.True(sql != nil)
	cmd, err := os.ReadFile("../cmd/pipeline/main.go")
	is.NoErr(err)
	if !strings.Contains(string(cmd), "`"+string(sql[1])+"`") {
		t.Errorf("README's table is not the pipeline command's:\n%s", sql[1])
	}
}

// The markers around a README's table of parameters, which a plugin
// prints with `spec -format markdown`.
const parametersBegin, parametersEnd = "<!-- spec -format markdown -->\n", "<!-- /spec -->\n"

// cutParameters returns what readme holds before its table of parameters,
// the table and what follows it; ok is false without the markers.
func cutParameters(readme string) (before, table, after string, ok bool) {
	before, rest, ok1 := strings.Cut(readme, parametersBegin)
	table, after, ok2 := strings.Cut(rest, parametersEnd)
	return before, table, after, ok1 && ok2
}

var updateReadmes = flag.Bool("update-readmes", false, "rewrite the parameter tables of examples/*/README.md from the plugins' specifications")

// TestExampleReadmeParameters holds the parameter table of each example's
// README, between the markers, to what its plugin prints with
// `spec -format markdown`. Run with -update-readmes to rewrite them.
func TestExampleReadmeParameters(t *testing.T) {
	for _, name := range []string{"generator", "log", "postgres", "jsonl", "file", "http"} {
		t.Run(name, func(t *testing.T) {
			table, err := exec.Command(binary("connkit-"+name), "spec", "-format", "markdown").Output()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("..", "..", "examples", name, "README.md")
			readme, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			before, current, after, ok := cutParameters(string(readme))
			if !ok {
				t.Fatalf("%s has no %q ... %q markers around its parameter table", path, parametersBegin, parametersEnd)
			}
			if current == string(table) {
				return
			}
			if !*updateReadmes {
				t.Fatalf("%s's parameter table is not what connkit-%s spec -format markdown prints; rewrite it with go test ./internal/e2e -run TestExampleReadmeParameters -update-readmes\nwant:\n%s", path, name, table)
			}
			if err := os.WriteFile(path, []byte(before+parametersBegin+string(table)+parametersEnd+after), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}
