package e2e

import (
	"context"
	"os/exec"
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
