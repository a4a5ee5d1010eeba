package chart

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/hack/bench-report/figure"
)

func TestNiceAxis(t *testing.T) {
	for _, tc := range []struct {
		v, end, step float64
	}{
		{0, 1, 0.25},
		{-3, 1, 0.25},
		{1, 1, 0.2},
		{7, 7, 1},
		{10, 10, 2},
		{97, 100, 20},
		{101, 120, 20},
		{10000, 10000, 2000},
		{0.03, 0.03, 0.005},
		{238.4, 250, 50},
	} {
		end, step := NiceAxis(tc.v)
		if !near(end, tc.end) || !near(step, tc.step) {
			t.Errorf("NiceAxis(%v) = %v, %v; want %v, %v", tc.v, end, step, tc.end, tc.step)
		}
		if tc.v > 0 && (end < tc.v || end/step > 8 || end/step < 4) {
			t.Errorf("NiceAxis(%v) = %v, %v: below the value or not 4 to 8 ticks", tc.v, end, step)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// elements parses svg as XML and counts its elements by name: a chart
// that is not well-formed XML shows as a broken image.
func elements(t *testing.T, svg string) (map[string]int, []string) {
	t.Helper()
	counts := map[string]int{}
	var texts []string
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return counts, texts
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			counts[tk.Name.Local]++
		case xml.CharData:
			if s := strings.TrimSpace(string(tk)); s != "" {
				texts = append(texts, s)
			}
		}
	}
}

func TestSVG(t *testing.T) {
	for _, tc := range []struct {
		name          string
		chart         figure.Chart
		wantPolylines int
		wantTexts     []string
	}{
		{"no series: the frame and 'no data'", figure.Chart{Title: "Empty", YLabel: "count"}, 0, []string{"Empty", "no data", "seconds"}},
		{"empty series are left out", figure.Chart{Title: "T", Series: []figure.Series{{Name: "none"}}}, 0, []string{"no data"}},
		{"two lines, a legend each, a mark",
			figure.Chart{Title: "Pods", YLabel: "count",
				Series: []figure.Series{{Name: "Synced", X: []float64{0, 1, 2}, Y: []float64{0, 50, 100}}, {Name: "tagged", X: []float64{0, 2}, Y: []float64{0, 100}}},
				Marks:  []figure.Mark{{X: 1, Label: "restart"}}},
			2, []string{"Pods", "Synced", "tagged", "restart", "100"}},
		{"text is escaped", figure.Chart{Title: `a<b & "c"`, Series: []figure.Series{{Name: "x<y", X: []float64{1}, Y: []float64{1}}}},
			1, []string{`a<b & "c"`, "x<y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counts, texts := elements(t, SVG(tc.chart))
			if counts["svg"] != 1 || counts["polyline"] != tc.wantPolylines {
				t.Errorf("elements %v, want one svg and %d polylines", counts, tc.wantPolylines)
			}
			for _, w := range tc.wantTexts {
				if !contains(texts, w) {
					t.Errorf("no text %q in %q", w, texts)
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestSVGScales: the largest value sits at the top of the plot and zero
// at its bottom, the last time at its right edge.
func TestSVGScales(t *testing.T) {
	svg := SVG(figure.Chart{Series: []figure.Series{{Name: "s", X: []float64{0, 10}, Y: []float64{0, 10}}}})
	want := `points="64.0,220.0 550.0,28.0"`
	if !strings.Contains(svg, want) {
		t.Errorf("want %s in\n%s", want, svg)
	}
}

// TestSVGMarkLabels: a mark's label stands right of its line, or left of
// it near the plot's right edge (not over the legend).
func TestSVGMarkLabels(t *testing.T) {
	for _, tc := range []struct {
		at   float64
		want string
	}{
		{1, `x="115.6" y="38" fill="#555" text-anchor="start">m</text>`},
		{10, `x="547.0" y="38" fill="#555" text-anchor="end">m</text>`},
	} {
		svg := SVG(figure.Chart{Series: []figure.Series{{Name: "s", X: []float64{0, 10}, Y: []float64{0, 1}}}, Marks: []figure.Mark{{X: tc.at, Label: "m"}}})
		if !strings.Contains(svg, tc.want) {
			t.Errorf("mark at %v: want %s in\n%s", tc.at, tc.want, svg)
		}
	}
}
