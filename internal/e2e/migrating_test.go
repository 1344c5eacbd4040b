package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/conduitio/conduit-connector-protocol/pconnector"
	"github.com/connkit/connkit/internal/host"
)

// TestMigratingCompiles builds the Go code of MIGRATING.md, its blocks
// together as one package, so the guide cannot drift from the API.
func TestMigratingCompiles(t *testing.T) {
	guide, err := os.ReadFile("../../MIGRATING.md")
	if err != nil {
		t.Fatal(err)
	}
	var code strings.Builder
	for _, m := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(guide, -1) {
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
	// testdata is inside the module, so the code builds against this
	// checkout, and ./... ignores it.
	dir, err := os.MkdirTemp("testdata", "migrating-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "guide.go"), []byte(header.String()+code.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "vet", "./"+dir).CombinedOutput(); err != nil {
		t.Fatalf("MIGRATING.md's code does not build: %v\n%s", err, out)
	}
}

// TestMigratingRecordFormat holds MIGRATING.md to what a plugin says of an
// invalid sdk.record.format.
func TestMigratingRecordFormat(t *testing.T) {
	p, err := host.Launch(binary("connkit-log"), host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	dst, err := p.Destination()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err = dst.Configure(ctx, pconnector.DestinationConfigureRequest{Config: map[string]string{"sdk.record.format": "json"}})
	want := `parameter "sdk.record.format": got "json", expected one of opencdc/json, debezium/json, template`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error saying %s", err, want)
	}
	guide, err := os.ReadFile("../../MIGRATING.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(guide), want) {
		t.Errorf("MIGRATING.md does not quote the error: %s", want)
	}
}
