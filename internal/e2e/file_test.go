package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/conduitio/conduit-commons/opencdc"
	conduitpkg "github.com/connkit/connkit/internal/conduit"
	"github.com/matryer/is"
)

// The file tests run connkit's file connector in real Conduit next to the
// plugin it ports: the incumbent's file connector v0.10.3, built standalone
// (Conduit v0.14.0's builtin:file is the same version).

// filePlugin is a file connector's plugin binary and how pipelines name it.
type filePlugin struct {
	name, bin, ref string
	// orphanGrace is how long the plugin is given to exit once Conduit is
	// killed, before it is killed too; zero means it must exit on its own.
	orphanGrace time.Duration
}

// filePlugins returns connkit's file plugin and the incumbent's. Both call
// themselves file: only the version tells them apart.
func filePlugins(t *testing.T) (connkit, incumbent filePlugin) {
	t.Helper()
	connkit = filePlugin{name: "connkit", bin: binary("connkit-file")}
	// The incumbent's plugins outlive a killed Conduit: they are given a
	// moment, then killed.
	incumbent = filePlugin{name: "incumbent", bin: incumbentPlugin(t, "file"), orphanGrace: 5 * time.Second}
	connkit.ref, incumbent.ref = pluginRef(t, connkit.bin), pluginRef(t, incumbent.bin)
	return connkit, incumbent
}

// incumbentFileWarnings are what the incumbent's file connector logs at warn
// level on every start: its source's lines and its destination's records
// are raw data, which it has no schema for.
var incumbentFileWarnings = []string{"are not structured and won't be encoded", "record does not have an attached schema for the"}

// parityInput is a file of lines that a port could get wrong: empty,
// ending in a carriage return, not ASCII, JSON, tabs, long.
func parityInput() string {
	var b strings.Builder
	for i := range 1000 {
		switch i % 7 {
		case 0:
			fmt.Fprintf(&b, "line %d\n", i)
		case 1:
			b.WriteString("\n")
		case 2:
			fmt.Fprintf(&b, "crlf %d\r\n", i)
		case 3:
			fmt.Fprintf(&b, "grüße, 世界 %d ✓\n", i)
		case 4:
			fmt.Fprintf(&b, `{"id":%d,"name":"n\"%d"}`+"\n", i, i)
		case 5:
			fmt.Fprintf(&b, "\ttabs\t%d\t \n", i)
		case 6:
			fmt.Fprintf(&b, "%d %s\n", i, strings.Repeat("long ", 20000)) // 100 kB
		}
	}
	return b.String()
}

// TestFileParity runs file → file pipelines in Conduit over one input file,
// each pair of connkit's and the incumbent's plugins on both engines, and
// checks that the output files are byte for byte the incumbent's on the
// default engine, but for the times the sources read each line at.
func TestFileParity(t *testing.T) {
	connkit, incumbent := filePlugins(t)
	in := filepath.Join(t.TempDir(), "in.txt")
	input := parityInput()
	if err := os.WriteFile(in, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := strings.Count(input, "\n")
	run := func(t *testing.T, src, dst filePlugin, flags ...string) []byte {
		t.Helper()
		out := filepath.Join(t.TempDir(), "out.txt")
		start := time.Now()
		c := startConduitWith(t, pipelineYAML(src.ref, map[string]string{"path": in}, dst.ref, map[string]string{"path": out}),
			[]string{connkit.bin, incumbent.bin}, flags...)
		c.waitForAcked(lines)
		c.stop()
		c.checkProblems(incumbentFileWarnings...)
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return withoutReadAt(t, b, start, time.Now())
	}
	want := run(t, incumbent, incumbent)
	if n := bytes.Count(want, []byte("\n")); n != lines {
		t.Fatalf("the incumbent wrote %d lines for %d", n, lines)
	}
	for _, engine := range engines {
		for _, pair := range [][2]filePlugin{{connkit, connkit}, {connkit, incumbent}, {incumbent, connkit}, {incumbent, incumbent}} {
			t.Run(engine.name+"/"+pair[0].name+" to "+pair[1].name, func(t *testing.T) {
				got := run(t, pair[0], pair[1], engine.flags...)
				if !bytes.Equal(got, want) {
					t.Fatal(firstDifference(got, want))
				}
			})
		}
	}
}

// readAt is the read time a file source puts in each record's metadata.
var readAt = regexp.MustCompile(`"opencdc\.readAt":"(\d+)"`)

// withoutReadAt checks that each line of out has one opencdc.readAt,
// between from and to, and returns out with each replaced by 0.
func withoutReadAt(t *testing.T, out []byte, from, to time.Time) []byte {
	t.Helper()
	lines := bytes.SplitAfter(out, []byte("\n"))
	for i, l := range lines {
		m := readAt.FindAllSubmatch(l, -1)
		if len(l) == 0 && i == len(lines)-1 {
			break
		}
		if len(m) != 1 {
			t.Fatalf("line %d has %d opencdc.readAt, want 1: %.200s", i+1, len(m), l)
		}
		at, err := strconv.ParseInt(string(m[0][1]), 10, 64)
		if err != nil || at < from.UnixNano() || at > to.UnixNano() {
			t.Fatalf("line %d: opencdc.readAt %s is not a time of the run, %v to %v", i+1, m[0][1], from, to)
		}
		lines[i] = readAt.ReplaceAll(l, []byte(`"opencdc.readAt":"0"`))
	}
	return bytes.Join(lines, nil)
}

// firstDifference describes the first line where got and want differ.
func firstDifference(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range min(len(g), len(w)) {
		if !bytes.Equal(g[i], w[i]) {
			return fmt.Sprintf("line %d differs:\n got %.300s\nwant %.300s", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g)-1, len(w)-1)
}

// TestFileResume runs a file → file pipeline of each plugin in Conduit with
// its state on disk, stops Conduit, gracefully or with SIGKILL, appends
// lines to the input, and starts Conduit again: no line may be lost, and
// after a graceful stop none may be written twice. The duplicates after a
// kill are logged.
func TestFileResume(t *testing.T) {
	connkit, incumbent := filePlugins(t)
	for _, p := range []filePlugin{connkit, incumbent} {
		for _, kill := range []bool{false, true} {
			name := p.name + "/graceful stop"
			if kill {
				name = p.name + "/kill"
			}
			t.Run(name, func(t *testing.T) { fileResume(t, p, kill) })
		}
	}
}

func fileResume(t *testing.T, p filePlugin, kill bool) {
	const before, after = 1000, 500
	dir, data := t.TempDir(), t.TempDir()
	in, out := filepath.Join(data, "in.txt"), filepath.Join(data, "out.txt")
	appendLines(t, in, 0, before)
	flags := []string{"--db.type", "badger", "--db.badger.path", filepath.Join(t.TempDir(), "conduit.db")}
	if kill {
		adoptOrphans(t)
		flags = append(flags, "--log.level", "debug") // to see positions persisted
	}
	c := startServer(t, conduitpkg.Options{
		Bin:      conduitBin(t),
		Dir:      dir,
		Pipeline: pipelineYAML(p.ref, map[string]string{"path": in}, p.ref, map[string]string{"path": out}),
		Plugins:  []string{p.bin},
		Flags:    flags,
	})
	c.waitForAcked(before)
	if kill {
		// Conduit persists positions a second after they are acked: the
		// kill comes once it has, so the restart resumes from a position.
		c.waitForLog(`"message":"persisted connectors"`)
		plugins := childrenRunning(t, c.Pid(), p.bin)
		c.Kill()
		if orphans := reap(t, plugins, p.orphanGrace); len(orphans) > 0 {
			t.Logf("%s: plugins %v still ran %v after Conduit was killed; killed", t.Name(), orphans, p.orphanGrace)
		}
	} else {
		c.stop()
		c.checkProblems(incumbentFileWarnings...)
	}

	appendLines(t, in, before, before+after)
	c = runConduit(t, conduitBin(t), dir, flags...)
	got := waitForPayload(t, c, out, fmt.Sprintf("line %d", before+after-1))
	c.stop()
	c.checkProblems(incumbentFileWarnings...)

	next, dups := 0, 0 // the line expected next; lines written again
	for i, payload := range got {
		n, err := strconv.Atoi(strings.TrimPrefix(payload, "line "))
		switch {
		case err == nil && n == next:
			next++
		case err == nil && n < next:
			dups++
		default:
			t.Fatalf("record %d of the output is %q, want line %d or one before it", i, payload, next)
		}
	}
	is := is.New(t)
	is.Equal(next, before+after) // every line, in order
	t.Logf("%s: %d lines, %d of them written again after the restart", t.Name(), len(got), dups)
	if !kill {
		is.Equal(dups, 0) // nothing written twice after a graceful stop
	}
}

// appendLines appends "line <from>" … "line <to-1>" to the file at path.
func appendLines(t *testing.T, path string, from, to int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	for i := from; i < to; i++ {
		fmt.Fprintf(w, "line %d\n", i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// waitForPayload waits until a record whose payload is last is in the
// output file at path, failing if the pipeline degrades, and returns the
// payloads of the file's records.
func waitForPayload(t *testing.T, c *conduit, path, last string) []string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		payloads := readPayloads(t, path)
		if len(payloads) > 0 && payloads[len(payloads)-1] == last {
			return payloads
		}
		if status, errText := c.PipelineState("e2e"); status == "STATUS_DEGRADED" {
			t.Fatalf("pipeline degraded: %s", errText)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q not written after 2 minutes; %d records are", last, len(payloads))
		}
		select {
		case <-c.Done():
			t.Fatalf("Conduit exited (%v) before %q was written", c.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// readPayloads returns the payloads of the records, in OpenCDC JSON, in
// the file at path; the last line is left out until it is whole.
func readPayloads(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		var r opencdc.Record
		if err := json.Unmarshal(b[:i], &r); err != nil {
			t.Fatalf("record %d of %s: %v", len(out), path, err)
		}
		out = append(out, string(r.Payload.After.Bytes()))
		b = b[i+1:]
	}
	return out
}

// waitForLog waits up to a minute for s in Conduit's log.
func (c *conduit) waitForLog(s string) {
	c.t.Helper()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(c.Log(), s); {
		if time.Now().After(deadline) {
			c.t.Fatalf("Conduit did not log %s within a minute", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// reap waits up to grace for the orphaned plugins to exit, which they do
// when they find their host gone, and kills those that do not: it returns
// them. With no grace it fails the test for them instead.
func reap(t *testing.T, pids []int, grace time.Duration) (killed []int) {
	t.Helper()
	deadline := time.Now().Add(cmp.Or(grace, time.Minute))
	for _, pid := range pids {
		for {
			var status syscall.WaitStatus
			got, err := syscall.Wait4(pid, &status, syscall.WNOHANG, nil)
			if err != nil || got == pid {
				break
			}
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				_, _ = syscall.Wait4(pid, &status, 0, nil)
				if grace == 0 {
					t.Errorf("plugin %d still ran a minute after Conduit was killed", pid)
				}
				killed = append(killed, pid)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return killed
}
