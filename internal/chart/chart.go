// Package chart draws simple SVG line charts for benchmark results.
package chart

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Series is one line of a chart: a value per x position, NaN where missing.
type Series struct {
	Label  string
	Color  string
	Dashed bool
	Values []float64
}

// Palette holds distinct colours for series.
var Palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

// lineWidth and lineHeight are the size of a [Line] chart in pixels.
const lineWidth, lineHeight = 760, 420

// Line renders series over evenly spaced x labels as an SVG document, with
// a linear or logarithmic y axis.
func Line(title, xLabel, yLabel string, xLabels []string, all []Series, logY bool) string {
	const w, h, left, right, top, bottom = lineWidth, lineHeight, 80, 220, 40, 50
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range all {
		for _, v := range s.Values {
			if !math.IsNaN(v) && v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 1, 10
	}
	if !logY {
		lo = 0
	}
	tf := func(v float64) float64 { return v }
	if logY {
		lo, hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
		tf = math.Log10
	} else {
		hi = niceCeil(hi)
	}
	y := func(v float64) float64 { return top + ph - (tf(v)-tf(lo))/(tf(hi)-tf(lo))*ph }
	x := func(i int) float64 {
		if len(xLabels) == 1 {
			return left + pw/2
		}
		return left + float64(i)*pw/float64(len(xLabels)-1)
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, title)
	// Horizontal grid lines with their values.
	var ticks []float64
	if logY {
		for v := lo; v <= hi*1.0001; v *= 10 {
			ticks = append(ticks, v)
		}
	} else {
		for i := 0; i <= 5; i++ {
			ticks = append(ticks, hi*float64(i)/5)
		}
	}
	for _, v := range ticks {
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, left+pw, y(v), y(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(v)+4, short(v))
	}
	for i, l := range xLabels {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(i), top+ph+18, l)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", left+pw/2, h-10, xLabel)
	fmt.Fprintf(&b, `<text x="16" y="%.1f" transform="rotate(-90 16 %.1f)" text-anchor="middle">%s</text>`+"\n", top+ph/2, top+ph/2, yLabel)
	for si, s := range all {
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var pts []string
		for i, v := range s.Values {
			if math.IsNaN(v) || v <= 0 {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x(i), y(v), s.Color)
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), s.Color, dash)
		ly := top + 10 + float64(si)*18
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", left+pw+16, left+pw+40, ly, ly, s.Color, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", left+pw+46, ly+4, s.Label)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// short formats a value for an axis: 1.5M, 250k, 12, 0.5.
func short(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// Panels lays charts made by [Line] side by side in one SVG document.
func Panels(charts ...string) string {
	const w, h = lineWidth, lineHeight
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d">`+"\n", w*len(charts), h)
	for i, c := range charts {
		b.WriteString(strings.Replace(c, "<svg ", fmt.Sprintf(`<svg x="%d" y="0" `, i*w), 1))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
