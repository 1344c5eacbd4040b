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
func writeResourceTable(t *strings.Builder, cells []*conduitCell, measured []pair, engines []string, loads []load) {
	t.WriteString("\nWhat the processes used in the same windows, read from /proc: CPU is user and system time per row, in µs (benchi's CPU %, a share of one core, is µs/row × rows/s ÷ 10,000); peak RSS is the largest resident set sampled every 100 ms, for PostgreSQL the sum over its postmaster and every backend (which counts the shared buffers a backend has touched once per backend). \"–\" is a process the cell does not have. On a busy machine processor time per row varies less than rows/s.\n\n")
	t.WriteString("| engine | batch | pipeline | rows/s | Conduit CPU | plugin CPU | PostgreSQL CPU | Conduit peak RSS | plugin peak RSS | PostgreSQL peak RSS |\n")
	t.WriteString("|" + strings.Repeat("---|", 10) + "\n")
	for _, e := range engines {
		for _, l := range loads {
			for _, p := range measured {
				c := findCell(cells, e, l, p.name)
				if c.err != nil {
					fmt.Fprintf(t, "| %s | %s | %s | failed | | | | | | |\n", e, l.label(), p.name)
					continue
				}
				fmt.Fprintf(t, "| %s | %s | %s | %s |%s\n", e, l.label(), p.name, thousands(c.rate()), resourceColumns(c.records, c.conduitUse, c.pluginUse, c.postgresUse))
			}
		}
	}
}

// resourceColumns formats the table cells of what Conduit, the plugins and
// PostgreSQL used for rows: their processor time per row, then their peak
// resident memory.
func resourceColumns(rows float64, conduit, plugins, postgres resourceUse) string {
	var b strings.Builder
	for _, u := range []resourceUse{conduit, plugins, postgres} {
		fmt.Fprintf(&b, " %s |", cpuPerRow(u, rows))
	}
	for _, u := range []resourceUse{conduit, plugins, postgres} {
		fmt.Fprintf(&b, " %s |", mebibytes(u))
	}
	return b.String()
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
// memory in bytes, empty for a process the cell does not have.
func conduitCSV(cells []*conduitCell) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"engine", "batch", "pipeline", "rows_per_s", "ceiling_percent", "mean_ms", "p99_ms",
		"conduit_cpu_us_per_row", "plugin_cpu_us_per_row", "postgres_cpu_us_per_row",
		"conduit_peak_rss_bytes", "plugin_peak_rss_bytes", "postgres_peak_rss_bytes", "error"})
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, c := range cells {
		line := []string{c.engine, c.label(), c.plugin.name}
		if c.err != nil {
			_ = w.Write(append(line, "", "", "", "", "", "", "", "", "", "", oneLine(c.err)))
			continue
		}
		share := ""
		if ceil := findCell(cells, c.engine, c.load, ceiling); ceil.err == nil {
			share = num(100 * c.rate() / ceil.rate())
		}
		p99, _ := c.hist.quantile(0.99)
		line = append(line, num(c.rate()), share, num(c.hist.mean()*1000), num(p99*1000))
		uses := []resourceUse{c.conduitUse, c.pluginUse, c.postgresUse}
		for _, u := range uses {
			v := ""
			if u.ok {
				v = num(u.cpu.Seconds() / c.records * 1e6)
			}
			line = append(line, v)
		}
		for _, u := range uses {
			v := ""
			if u.ok {
				v = strconv.FormatInt(u.peakRSS, 10)
			}
			line = append(line, v)
		}
		_ = w.Write(append(line, ""))
	}
	w.Flush()
	return b.String()
}
