package main

import (
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"
)

// writeResourceTable writes what Conduit, the plugin and PostgreSQL used in
// every cell's window: processor time per row, in microseconds (benchi's
// CPU % is this times rows/s over 10,000), and peak resident memory.
func writeResourceTable(t *strings.Builder, cells []*conduitCell, measured, engines []string, loads []load) {
	t.WriteString("\nWhat the processes used in the same windows, read from /proc: CPU is user and system time per row, in µs (benchi's CPU %, a share of one core, is µs/row × rows/s ÷ 10,000); peak RSS is the largest resident set sampled every 100 ms, for PostgreSQL the sum over its postmaster and every backend (which counts the shared buffers a backend has touched once per backend). \"–\" is a process the cell does not have. On a busy machine processor time per row varies less than rows/s. " + destinationConnsNote + "\n\n")
	writeResourceHead(t, "batch", "plugin")
	for _, e := range engines {
		for _, l := range loads {
			for _, p := range measured {
				c := findCell(cells, e, l, p)
				writeResourceRow(t, e, l.label(), p, c.window, c.err)
			}
		}
	}
}

// writeResourceHead writes the head of a table of what the processes used
// in each window: column names the column that tells a pipeline's windows
// apart, plugin its plugin processes.
func writeResourceHead(t *strings.Builder, column, plugin string) {
	writeTableHead(t, fmt.Sprintf("| engine | %[1]s | pipeline | rows/s | Conduit CPU | %[2]s CPU | PostgreSQL CPU | Conduit peak RSS | %[2]s peak RSS | PostgreSQL peak RSS | destination connections |", column, plugin))
}

// writeResourceRow writes the row of window w of a pipeline in an engine,
// under label: its rows/s, the processor time per row and peak resident
// memory of Conduit, the plugins and PostgreSQL, and the Postgres
// destination's connections at the window's end; or, with err, that the
// pipeline failed.
func writeResourceRow(t *strings.Builder, engine, label, pipeline string, w window, err error) {
	fmt.Fprintf(t, "| %s | %s | %s |", engine, label, pipeline)
	if err != nil {
		t.WriteString(" failed | | | | | | | |\n")
		return
	}
	fmt.Fprintf(t, " %s |", thousands(w.rate()))
	for _, u := range w.used() {
		fmt.Fprintf(t, " %s |", cpuPerRow(u, w.records))
	}
	for _, u := range w.used() {
		fmt.Fprintf(t, " %s |", mebibytes(u))
	}
	fmt.Fprintf(t, " %s |\n", w.conns.cell())
}

// shareOf formats c's rows/s as a percentage of the ceiling's, " (41%)";
// empty if the ceiling was not measured or failed.
func shareOf(c, ceiling *conduitCell) string {
	if ceiling.err != nil {
		return ""
	}
	return fmt.Sprintf(" (%.0f%%)", 100*c.rate()/ceiling.rate())
}

func cpuPerRow(u resourceUse, rows float64) string {
	if !u.ok {
		return "–"
	}
	us := u.cpu.Seconds() / rows * 1e6
	if us >= 100 {
		return thousands(us) + " µs/row"
	}
	return strconv.FormatFloat(us, 'f', 1, 64) + " µs/row"
}

func mebibytes(u resourceUse) string {
	if !u.ok {
		return "–"
	}
	return strconv.FormatFloat(float64(u.peakRSS)/(1<<20), 'f', 0, 64) + " MiB"
}

// conduitCSV is every cell of a run, a line each, in plain units: rows per
// second and percentage of the ceiling (empty without one), latency in
// milliseconds, processor time in microseconds per row and peak resident
// memory in bytes, empty for a process the cell does not have, and the
// Postgres destination's connections, empty where it named none or there
// is none.
func conduitCSV(cells []*conduitCell) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"engine", "batch", "pipeline", "rows_per_s", "ceiling_percent", "mean_ms", "p99_ms",
		"conduit_cpu_us_per_row", "plugin_cpu_us_per_row", "postgres_cpu_us_per_row",
		"conduit_peak_rss_bytes", "plugin_peak_rss_bytes", "postgres_peak_rss_bytes", "destination_connections", "error"})
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, c := range cells {
		line := []string{c.engine, c.label(), c.plugin.name}
		if c.err != nil {
			_ = w.Write(append(line, "", "", "", "", "", "", "", "", "", "", "", oneLine(c.err)))
			continue
		}
		share := ""
		if ceil := findCell(cells, c.engine, c.load, ceiling); ceil.err == nil {
			share = num(100 * c.rate() / ceil.rate())
		}
		p99, _ := c.hist.quantile(0.99)
		line = append(line, num(c.rate()), share, num(c.hist.mean()*1000), num(p99*1000))
		for _, u := range c.used() {
			v := ""
			if u.ok {
				v = num(u.cpu.Seconds() / c.records * 1e6)
			}
			line = append(line, v)
		}
		for _, u := range c.used() {
			v := ""
			if u.ok {
				v = strconv.FormatInt(u.peakRSS, 10)
			}
			line = append(line, v)
		}
		_ = w.Write(append(line, c.conns.csv(), ""))
	}
	w.Flush()
	return b.String()
}
