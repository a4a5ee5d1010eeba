// Package chart draws a figure's time series as a small SVG line chart:
// hand-written so the report needs no plotting library, and legible on
// GitHub and in a browser.
package chart

import (
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/eni-operator/eni-operator/hack/bench-report/figure"
)

// The chart's frame, in SVG user units.
const (
	width, height            = 720, 260
	left, right, top, bottom = 64, 170, 28, 40
	plotW, plotH             = width - left - right, height - top - bottom
)

// color is the i-th line's colour: distinguishable on white, also for
// red-green colour blindness.
func color(i int) string {
	palette := [...]string{"#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#000000"}
	return palette[i%len(palette)]
}

// SVG draws c. Empty series are left out; a chart with no point at all
// still draws its frame and says "no data".
func SVG(c figure.Chart) string {
	maxX, maxY := 0.0, 0.0
	for _, s := range c.Series {
		for i := range min(len(s.X), len(s.Y)) {
			maxX, maxY = max(maxX, s.X[i]), max(maxY, s.Y[i])
		}
	}
	for _, m := range c.Marks {
		maxX = max(maxX, m.X)
	}
	xTop, xStep := NiceAxis(maxX)
	yTop, yStep := NiceAxis(maxY)
	px := func(x float64) float64 { return left + x/xTop*plotW }
	py := func(y float64) float64 { return top + plotH - y/yTop*plotH }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="13" font-weight="bold">%s</text>`+"\n", left, esc(c.Title))
	for y := 0.0; y <= yTop+yStep/2; y += yStep {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left, left+plotW, py(y), py(y), left-4, py(y)+4, figure.Num(y))
	}
	for x := 0.0; x <= xTop+xStep/2; x += xStep {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n",
			px(x), px(x), top, top+plotH, px(x), top+plotH+14, figure.Num(x))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">seconds</text>`+"\n", left+plotW/2, height-6)
	fmt.Fprintf(&b, `<text transform="translate(14 %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+plotH/2, esc(c.YLabel))
	for i, m := range c.Marks {
		// Labels step down so that marks close together stay legible,
		// and stand left of a mark in the plot's right quarter so they
		// stay out of the legend.
		x, anchor := px(m.X)+3, "start"
		if px(m.X) > left+plotW*3/4 {
			x, anchor = px(m.X)-3, "end"
		}
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#888" stroke-dasharray="4 3"/><text x="%.1f" y="%d" fill="#555" text-anchor="%s">%s</text>`+"\n",
			px(m.X), px(m.X), top, top+plotH, x, top+10+12*(i%3), anchor, esc(m.Label))
	}
	drawn := 0
	for _, s := range c.Series {
		n := min(len(s.X), len(s.Y))
		if n == 0 {
			continue
		}
		color := color(drawn)
		pts := make([]string, n)
		for i := range n {
			pts[i] = fmt.Sprintf("%.1f,%.1f", px(s.X[i]), py(s.Y[i]))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		ly := top + 8 + 16*drawn
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"/><text x="%d" y="%d">%s</text>`+"\n",
			left+plotW+10, left+plotW+26, ly, ly, color, left+plotW+30, ly+4, esc(s.Name))
		drawn++
	}
	if drawn == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#888">no data</text>`+"\n", left+plotW/2, top+plotH/2)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// NiceAxis returns an axis end at or above v and a tick step, both round
// numbers (1, 2 or 5 times a power of ten) giving four to eight ticks; an
// axis of nothing (v ≤ 0) is 0 to 1.
func NiceAxis(v float64) (end, step float64) {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1, 0.25
	}
	raw := v / 8
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	step = 10 * pow
	for _, m := range []float64{1, 2, 5} {
		if m*pow >= raw {
			step = m * pow
			break
		}
	}
	return math.Ceil(v/step-1e-9) * step, step
}

func esc(s string) string { return html.EscapeString(s) }
