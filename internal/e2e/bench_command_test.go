package e2e

import (
	"encoding/csv"
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
	bench := buildCommand(t, "bench")
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
	// Each run's share of the COPY beside it.
	is.Equal(len(regexp.MustCompile(`\| \d+% of \d+ \|`).FindAllString(pgOut, -1)), 4)
	_, err := os.Stat(filepath.Join(dir, "postgres.svg"))
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
	out, err := exec.Command(bench, "sweep", "-engine", "v3").CombinedOutput()
	is.True(err != nil)
	is.True(strings.Contains(string(out), `-engine: got "v3", expected default or v2`))
}

// TestBenchConduit runs the bench command's conduit mode, real Conduit
// with both Postgres destinations and the ceiling pipeline, on one batch
// size in both engines for a 3 s window per cell (long enough for every
// process to use some of /proc's 10 ms ticks), and checks that
// its table has every cell, with what the processes used: present and
// positive, never how fast.
func TestBenchConduit(t *testing.T) {
	is := is.New(t)
	conduitPath, incumbent := conduitBin(t), incumbentBin(t)
	bench := buildCommand(t, "bench")
	url, _ := pg.Database(t, "")
	dir := t.TempDir()
	args := []string{"conduit", "-conduit", conduitPath, "-url", url, "-out", dir,
		"-plugin", binary("connkit-postgres"), "-vs-plugin", filepath.Join(incumbent, "postgres"),
		"-batch-sizes", "100", "-engines", "default,v2", "-idle-rate", "0", "-warmup", "0s", "-duration", "3s"}
	report := runBench(t, bench, args...)
	positive := func(s string) bool {
		v, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
		return err == nil && v > 0
	}
	for _, engine := range []string{"default", "v2"} {
		// rows/s with its share of the ceiling, mean and p99 for both
		// plugins, their ratio, and the ceiling's rows/s.
		row := regexp.MustCompile(`\| ` + engine + ` \| 100 \|( [\d,]+ \((\d+)%\) \| [\d.,]+ ms \| (> )?[\d.,]+ ms \|){2} [\d.]+x \| ([\d,]+) \|`).FindStringSubmatch(report)
		is.True(row != nil)                                    // a row with every cell
		is.True(positive(row[2]) && positive(row[len(row)-1])) // a share of a ceiling that moved rows
		// CPU per row and peak RSS of Conduit, the plugin and PostgreSQL
		// for each plugin; of Conduit alone for the ceiling.
		for _, p := range []string{"connkit", "incumbent"} {
			m := regexp.MustCompile(`\| ` + engine + ` \| 100 \| ` + p + ` \| [\d,]+ \|` + strings.Repeat(` ([\d.,]+) µs/row \|`, 3) + strings.Repeat(` (\d+) MiB \|`, 3)).FindStringSubmatch(report)
			is.True(m != nil) // a resource row for the plugin
			for _, v := range m[1:4] {
				is.True(positive(v)) // processor time per row
			}
			for _, v := range m[4:] {
				is.True(positive(v)) // peak resident memory
			}
		}
		m := regexp.MustCompile(`\| ` + engine + ` \| 100 \| ceiling \| [\d,]+ \| ([\d.,]+) µs/row \| – \| – \| (\d+) MiB \| – \| – \|`).FindStringSubmatch(report)
		is.True(m != nil) // the ceiling's row: Conduit alone
		is.True(positive(m[1]) && positive(m[2]))
	}
	is.True(!strings.Contains(report, "failed"))
	md, err := os.ReadFile(filepath.Join(dir, "conduit.md"))
	is.NoErr(err)
	is.True(strings.Contains(report, string(md)))
	svg, err := os.ReadFile(filepath.Join(dir, "conduit.svg"))
	is.NoErr(err)
	is.Equal(strings.Count(string(svg), "<polyline"), 8) // two plugins × two engines × two charts

	// The CSV has the same cells: a line for each pipeline in each engine,
	// with positive figures wherever the pipeline has the process.
	f, err := os.Open(filepath.Join(dir, "conduit.csv"))
	is.NoErr(err)
	defer f.Close()
	lines, err := csv.NewReader(f).ReadAll()
	is.NoErr(err)
	is.Equal(len(lines), 1+2*3)
	is.Equal(lines[0][0:5], []string{"engine", "batch", "pipeline", "rows_per_s", "ceiling_percent"})
	for _, l := range lines[1:] {
		is.Equal(l[len(l)-1], "") // no error
		figures := l[3 : len(l)-2]
		switch l[2] {
		case "ceiling": // no plugin, no PostgreSQL
			figures = []string{l[3], l[4], l[5], l[6], l[7], l[10]}
		case "connkit": // its destination names its connections
			figures = append(figures, l[len(l)-2])
		}
		for _, v := range figures {
			is.True(positive(v)) // every figure of the line
		}
	}
}

// TestBenchHTTP runs the bench command's http mode, real Conduit into
// connkit's http destination against the bench's own servers (the plain
// one, the one that refuses beyond a limit, and the dropping one with a
// single worker), for a 2 s window per cell, and checks that every cell
// ran with its acks in order, every record at the server once, auto with
// more than one Write in flight and the servers' limits kept: never how
// fast.
func TestBenchHTTP(t *testing.T) {
	is := is.New(t)
	conduitPath := conduitBin(t)
	bench := buildCommand(t, "bench")
	dir := t.TempDir()
	args := []string{"http", "-conduit", conduitPath, "-plugin", binary("connkit-http"), "-out", dir,
		"-sinks", "plain,limit,dropping", "-max-concurrent", "3", "-workers", "1", "-warmup", "1s", "-duration", "2s"}
	report := runBench(t, bench, args...)
	// The table under each kind of server.
	tables := map[string]string{}
	for _, section := range strings.Split(report, "\n**")[1:] {
		kind, table, _ := strings.Cut(section, "**:")
		tables[kind] = table
	}
	// setting, rows/s, mean, ratio, mean Write, limit (in flight),
	// requests, refused, max in flight, (the dropping server's) listen
	// overflows, records at Conduit and the server, duplicates.
	row := func(kind, setting string) []string {
		t.Helper()
		m := regexp.MustCompile(`\| default \| ` + setting + ` \| [\d,]+ \| [\d.,]+ ms \| [\d.]+x \| [\d.,]+ ms \| (\d+) \(\d+\) \| [\d,]+ \| [\d.]+% \| (\d+) \|( [\d,]+ \|)? ([\d,]+) / ([\d,]+) \| 0 \| yes \|`).FindStringSubmatch(tables[kind])
		is.True(m != nil)                        // a row of the setting, no duplicates, acks in order
		is.Equal(m[4], m[5])                     // as many records at Conduit as at the server
		is.Equal(m[3] != "", kind == "dropping") // listen overflows in the dropping server's table alone
		return m
	}
	auto := row("plain", "auto")
	is.True(auto[1] != "1" && auto[2] != "1") // auto raised its limit, and the server saw it
	one := row("plain", "1")
	is.Equal(one[1:3], []string{"1", "1"}) // one Write at a time
	limited := row("limit", "auto")
	n, _ := strconv.Atoi(limited[2])
	is.True(n <= 3) // the server's limit held
	for _, setting := range []string{"1", "auto"} {
		dropped := row("dropping", setting)
		is.Equal(dropped[2], "1") // one worker, the server's only concurrency
	}
	is.Equal(len(tables), 3)
	md, err := os.ReadFile(filepath.Join(dir, "http.md"))
	is.NoErr(err)
	is.True(strings.Contains(report, string(md)))
}

// runBench runs the bench command with args and returns its report, which
// the test logs if it fails.
func runBench(t *testing.T, bench string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bench, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("bench %v: %v\n%s", args, err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(string(out))
		}
	})
	return string(out)
}
