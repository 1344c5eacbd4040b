package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// TestBenchCommand runs the bench command's modes on small counts
// against connkit's plugins and checks what they report and write.
func TestBenchCommand(t *testing.T) {
	is := is.New(t)
	bench := filepath.Join(t.TempDir(), "bench")
	out, err := exec.Command("go", "build", "-o", bench, "github.com/connkit/connkit/internal/cmd/bench").CombinedOutput()
	if err != nil {
		t.Fatalf("build bench: %v\n%s", err, out)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bench, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("bench %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	src := run("source", "-plugin", binary("connkit-generator"), "-config", "format.options.id=int", "-records", "5000")
	is.True(regexp.MustCompile(`^5000 records in .*: \d+ records/s, .* records per message`).MatchString(src))

	dst := run("destination", "-plugin", binary("connkit-log"), "-config", "level=trace", "-config", "sdk.batch.size=100", "-records", "3000", "-payload", "100")
	is.True(regexp.MustCompile(`^3000 records in .*: \d+ records/s, [\d.]+ MB/s; ack latency p50 .*, p90 .*, p99 .*, max `).MatchString(dst))
	run("destination", "-plugin", binary("connkit-log"), "-config", "level=trace", "-records", "1000", "-fields", "id=int,name=string,ok=bool", "-per-message", "50")

	dir := t.TempDir()
	sweep := run("sweep", "-source", binary("connkit-generator"), "-destination", binary("connkit-log"),
		"-destination-config", "level=trace", "-vs-name", "again",
		"-vs-source", binary("connkit-generator"), "-vs-destination", binary("connkit-log"), "-vs-destination-config", "level=trace",
		"-batch-sizes", "1,10", "-payload-sizes", "25,1024", "-records", "2000", "-out", dir)
	is.True(strings.Contains(sweep, "| 25 B | 1 |"))
	is.True(strings.Contains(sweep, "| 1 KiB | 10 |"))
	is.Equal(strings.Count(sweep, "x |"), 4) // a ratio in every row
	for _, f := range []string{"results.md", "throughput.svg", "latency.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		is.NoErr(err)
		is.True(len(b) > 100)
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "throughput.svg"))
	is.Equal(strings.Count(string(svg), "<polyline"), 4) // two pairs × two payload sizes

	url, _ := pg.Database(t, "")
	pgOut := run("postgres", "-plugin", binary("connkit-postgres"), "-url", url, "-batch-sizes", "1,10", "-records", "300", "-out", dir)
	is.True(strings.Contains(pgOut, "| 10 |"))
	is.True(!strings.Contains(pgOut, "failed")) // every run left its 300 rows
	_, err = os.Stat(filepath.Join(dir, "postgres.svg"))
	is.NoErr(err)

	srcURL, _ := pg.Database(t, "")
	pgsOut := run("pgsource", "-plugin", binary("connkit-postgres"), "-vs-name", "again", "-vs-plugin", binary("connkit-postgres"), "-vs-dialect", "connkit",
		"-url", srcURL, "-batch-sizes", "0,100", "-records", "500", "-changes", "300", "-rounds", "1", "-out", dir)
	is.True(strings.Contains(pgsOut, "| not set |"))
	is.True(strings.Contains(pgsOut, "| 100 |"))
	is.True(!strings.Contains(pgsOut, "failed"))
	is.Equal(strings.Count(pgsOut, "x |"), 4) // snapshot and CDC ratios in both rows
	_, err = os.Stat(filepath.Join(dir, "pgsource.svg"))
	is.NoErr(err)

	// Bad flags are errors that say what was expected.
	out, err = exec.Command(bench, "sweep", "-engine", "v3").CombinedOutput()
	is.True(err != nil)
	is.True(strings.Contains(string(out), `-engine: got "v3", expected default or v2`))
}
