package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/connkit/connkit/internal/host"
	"github.com/connkit/connkit/internal/pgtest"
)

// binDir holds connkit's plugins; faultyBin is the test plugin in
// ./testdata/faulty; pg is a PostgreSQL server for the tests that need
// one; schemas is the schema service the plugins of a pipeline share.
var (
	binDir, faultyBin string
	pg                *pgtest.Server
	schemas           *host.SchemaService
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	pkgs := []string{"./testdata/faulty"}
	binDir = os.Getenv("CONNKIT_BIN")
	if binDir == "" {
		pkgs = append(pkgs,
			"github.com/connkit/connkit/examples/generator/cmd/connkit-generator",
			"github.com/connkit/connkit/examples/log/cmd/connkit-log",
			"github.com/connkit/connkit/examples/postgres/cmd/connkit-postgres",
			"github.com/connkit/connkit/examples/jsonl/cmd/connkit-jsonl",
			"github.com/connkit/connkit/examples/file/cmd/connkit-file",
			"github.com/connkit/connkit/examples/http/cmd/connkit-http")
	}
	testBin, err := os.MkdirTemp("", "connkit-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(testBin)
	cmd := exec.Command("go", append([]string{"build", "-o", testBin + "/"}, pkgs...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build plugins:", err)
		return 1
	}
	faultyBin = filepath.Join(testBin, "faulty")
	if binDir == "" {
		binDir = testBin
	}
	binDir, _ = filepath.Abs(binDir)
	if pg, err = pgtest.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer pg.Stop()
	if schemas, err = host.StartSchemaService(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer schemas.Stop()
	return m.Run()
}

func binary(name string) string { return filepath.Join(binDir, name) }

// buildCommand builds connkit's command internal/cmd/name into the test's
// temporary directory and returns its binary.
func buildCommand(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/connkit/connkit/internal/cmd/"+name).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, out)
	}
	return bin
}
