package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

	// At least the records asked for: what the source read ahead while the
	// host stopped it is sent too.
	src := run("source", "-plugin", binary("connkit-generator"), "-config", "format.options.id=int", "-records", "5000")
	m := regexp.MustCompile(`^(\d+) records in .*: \d+ records/s, .* records per message`).FindStringSubmatch(src)
	is.True(m != nil)
	n, _ := strconv.Atoi(m[1])
	is.True(n >= 5000)

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

// TestBenchConduit runs the bench command's conduit mode, real Conduit
// with both Postgres destinations, on one batch size in both engines for a
// few hundred records per cell, and checks that its table has every cell.
func TestBenchConduit(t *testing.T) {
	is := is.New(t)
	conduitPath, incumbent := conduitBin(t), incumbentBin(t)
	bench := filepath.Join(t.TempDir(), "bench")
	out, err := exec.Command("go", "build", "-o", bench, "github.com/connkit/connkit/internal/cmd/bench").CombinedOutput()
	if err != nil {
		t.Fatalf("build bench: %v\n%s", err, out)
	}
	url, _ := pg.Database(t, "")
	dir := t.TempDir()
	args := []string{"conduit", "-conduit", conduitPath, "-url", url, "-out", dir,
		"-plugin", binary("connkit-postgres"), "-vs-plugin", filepath.Join(incumbent, "postgres"),
		"-batch-sizes", "100", "-engines", "default,v2", "-warmup", "0s", "-records", "300", "-duration", "1m"}
	out, err = exec.Command(bench, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("bench %v: %v\n%s", args, err, out)
	}
	report := string(out)
	for _, engine := range []string{"default", "v2"} {
		// rows/s, mean and p99 for both plugins, and their ratio.
		row := regexp.MustCompile(`\| ` + engine + ` \| 100 \|( [\d,]+ \| [\d.,]+ ms \| (> )?[\d.,]+ ms \|){2} [\d.]+x \|`)
		is.True(row.MatchString(report)) // a row with every cell
	}
	is.True(!strings.Contains(report, "failed"))
	md, err := os.ReadFile(filepath.Join(dir, "conduit.md"))
	is.NoErr(err)
	is.True(strings.Contains(report, string(md)))
	svg, err := os.ReadFile(filepath.Join(dir, "conduit.svg"))
	is.NoErr(err)
	is.Equal(strings.Count(string(svg), "<polyline"), 8) // two plugins × two engines × two charts
}
