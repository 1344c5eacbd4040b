package e2e

import (
	"context"
	"encoding/json"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/host"
)

// TestMigratingCompiles builds the Go code of MIGRATING.md, its blocks
// together as one package, so the guide cannot drift from the API.
func TestMigratingCompiles(t *testing.T) {
	var code strings.Builder
	for _, m := range goBlock.FindAllSubmatch(readDoc(t, "MIGRATING.md"), -1) {
		code.Write(m[1])
		code.WriteString("\n")
	}
	if code.Len() == 0 {
		t.Fatal("MIGRATING.md has no Go code")
	}
	imports := map[string]string{
		"sdk": "github.com/connkit/connkit/sdk", "sdktest": "github.com/connkit/connkit/sdk/sdktest",
		"context": "context", "time": "time",
		"strconv": "strconv", "testing": "testing", "fmt": "fmt", "errors": "errors",
	}
	var header strings.Builder
	header.WriteString("package migrating\n\nimport (\n")
	for name, path := range imports {
		if regexp.MustCompile(`\b` + name + `\.`).MatchString(code.String()) {
			header.WriteString("\t\"" + path + "\"\n")
		}
	}
	header.WriteString(")\n\n")
	dir := testdataPackage(t, "migrating-", "guide.go", []byte(header.String()+code.String()))
	if out, err := exec.Command("go", "vet", dir).CombinedOutput(); err != nil {
		t.Fatalf("MIGRATING.md's code does not build: %v\n%s", err, out)
	}
}

// TestMigratingRecordFormat holds MIGRATING.md to what a plugin says of an
// invalid sdk.record.format.
func TestMigratingRecordFormat(t *testing.T) {
	dst := destination(t, host.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := dst.Configure(ctx, pconnector.DestinationConfigureRequest{Config: map[string]string{"sdk.record.format": "json"}})
	want := `parameter "sdk.record.format": got "json", expected one of opencdc/json, debezium/json, template`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error saying %s", err, want)
	}
	if !strings.Contains(string(readDoc(t, "MIGRATING.md")), want) {
		t.Errorf("MIGRATING.md does not quote the error: %s", want)
	}
}

// TestMigratingFilePortSize holds MIGRATING.md's comparison of
// examples/file with the incumbent's file connector to the code: the
// lines of Go that hold code (not blank, not only comments) in each
// module's files, tests left out, and the non-blank lines of the
// incumbent's connector.yaml.
func TestMigratingFilePortSize(t *testing.T) {
	m := regexp.MustCompile("\\((\\d+) code lines against (\\d+) plus a (\\d+)-line `connector.yaml`").FindSubmatch(readDoc(t, "MIGRATING.md"))
	if m == nil {
		t.Fatal("MIGRATING.md no longer says how many code lines examples/file has against the incumbent's; update this test")
	}
	incumbent := moduleDir(t, "incumbent", "github.com/conduitio/conduit-connector-file")
	yaml, err := os.ReadFile(filepath.Join(incumbent, "connector.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range []int{
		codeLines(t, filepath.Join("..", "..", "examples", "file")),
		codeLines(t, incumbent),
		len(regexp.MustCompile(`(?m)^[ \t]*\S`).FindAll(yaml, -1)),
	} {
		if want := string(m[i+1]); strconv.Itoa(got) != want {
			t.Errorf("MIGRATING.md says %s in %q; the count is %d", want, m[0], got)
		}
	}
}

// moduleDir returns the directory of the module path that the module in
// dir requires, downloaded into the module cache if it is not there.
func moduleDir(t *testing.T, dir, path string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", path)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v\n%s", path, err, out)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download %s: no directory (%v) in\n%s", path, err, out)
	}
	return m.Dir
}

// codeLines returns how many lines of the Go files below dir, tests left
// out, hold code: a token other than a comment.
func codeLines(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".go" || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n += len(codeLinesOf(src))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// codeLinesOf returns the numbers of the lines of Go source src that hold
// a token other than a comment.
func codeLinesOf(src []byte) map[int]bool {
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile("", -1, len(src)), src, nil, 0) // comments are skipped
	lines := map[int]bool{}
	for {
		pos, tok, lit := s.Scan()
		switch {
		case tok == token.EOF:
			return lines
		case tok == token.SEMICOLON && lit == "\n": // inserted at a line's end
		default:
			lines[fset.Position(pos).Line] = true
		}
	}
}
