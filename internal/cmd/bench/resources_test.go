package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// A busy child counts in its parent's tree, while it runs and once it has
// ended and been waited for; the tree's resident set includes the child's.
func TestSamplingProcessTree(t *testing.T) {
	is := is.New(t)
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip(err)
	}
	alone, tree := processes(os.Getpid()), processTree(os.Getpid())
	s := startSampling(10*time.Millisecond, alone, tree, processes())
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done")
	is.NoErr(cmd.Start())
	time.Sleep(50 * time.Millisecond) // sampled while the child runs
	is.NoErr(cmd.Wait())
	used := s.finish()
	is.True(used[0].ok && used[1].ok)
	is.True(used[1].cpu > used[0].cpu)         // the child's time, in the tree alone
	is.True(used[1].peakRSS > used[0].peakRSS) // the child's resident set too
	is.True(used[0].peakRSS > 1<<20)
	is.True(!used[2].ok) // no processes: not measured
}

func TestConduitCSV(t *testing.T) {
	is := is.New(t)
	h := histogram{count: 1000, sum: 2, bounds: []float64{.01, 1}, cumulative: []float64{500, 1000}}
	cell := func(name string, records float64, conduitCPU time.Duration) *conduitCell {
		return &conduitCell{engine: "default", load: load{batch: 1}, plugin: plugin{name: name}, window: window{records: records, elapsed: 10, hist: h,
			conduitUse: resourceUse{cpu: conduitCPU, peakRSS: 64 << 20, ok: true}}}
	}
	pg := cell("connkit", 1000, time.Second)
	pg.pluginUse = resourceUse{cpu: 500 * time.Millisecond, peakRSS: 30 << 20, ok: true}
	pg.conns = destinationConns{n: 4, ok: true}
	cells := []*conduitCell{pg, cell(ceiling, 4000, 2*time.Second), {engine: "v2", load: load{batch: 1}, plugin: plugin{name: "connkit"}, err: errors.New("degraded")}}
	lines := strings.Split(strings.TrimSpace(conduitCSV(cells)), "\n")
	is.Equal(len(lines), 4)
	is.True(strings.HasPrefix(lines[0], "engine,batch,pipeline,rows_per_s,ceiling_percent,"))
	is.True(strings.HasSuffix(lines[0], ",postgres_peak_rss_bytes,destination_connections,error"))
	// p99 interpolates in the bucket (10 ms, 1 s]: 10 + 990 × 490/500 ms.
	is.Equal(lines[1], "default,1,connkit,100,25,2,980.2,1000,500,,67108864,31457280,,4,")
	is.Equal(lines[2], "default,1,ceiling,400,100,2,980.2,500,,,67108864,,,,")
	is.Equal(lines[3], "v2,1,connkit,,,,,,,,,,,,degraded")
}

// The resources table gives the Postgres destination's connections at the
// end of each window: a count where the destination names its
// connections, blank where it named none (the incumbent's), "–" where the
// pipeline has no Postgres destination (the ceiling's); a failed cell's
// row has as many columns as the others.
func TestDestinationConnectionsColumn(t *testing.T) {
	is := is.New(t)
	w := func(conns destinationConns) window {
		return window{records: 1000, elapsed: 10, conns: conns}
	}
	l := load{batch: 100}
	cells := []*conduitCell{
		{engine: "default", load: l, plugin: plugin{name: "connkit"}, window: w(destinationConns{n: 7, ok: true})},
		{engine: "default", load: l, plugin: plugin{name: "incumbent"}, window: w(destinationConns{ok: true})},
		{engine: "default", load: l, plugin: plugin{name: ceiling}, window: w(destinationConns{})},
		{engine: "v2", load: l, plugin: plugin{name: "connkit"}, err: errors.New("degraded")},
	}
	var table strings.Builder
	writeResourceTable(&table, cells, []string{"connkit", "incumbent", ceiling}, []string{"default", "v2"}, []load{l})
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	var head string
	rows := map[string]string{} // the last cell of each row, by engine and pipeline
	for _, line := range lines {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		if head == "" {
			head = line
			is.True(strings.HasSuffix(head, "| PostgreSQL peak RSS | destination connections |"))
			continue
		}
		is.Equal(strings.Count(line, "|"), strings.Count(head, "|")) // every row has every column
		cols := strings.Split(line, "|")
		rows[strings.TrimSpace(cols[1])+" "+strings.TrimSpace(cols[3])] = strings.TrimSpace(cols[len(cols)-2])
	}
	is.Equal(rows, map[string]string{
		"default connkit":   "7",
		"default incumbent": "",
		"default ceiling":   "–",
		"v2 connkit":        "",
		"v2 incumbent":      "", // not run: failed
		"v2 ceiling":        "",
	})
}
