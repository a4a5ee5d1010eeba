package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/hack/bench-report/figure"
)

func TestRender(t *testing.T) {
	burst := figure.Figure{Name: "7-pod-burst", Parameters: map[string]any{"pods": 10000.0},
		Results: map[string]any{"kubeWritesPerPod": 2.04, "p50IPToTags": "1.2s"}, EC2Calls: map[string]int{"CreateTags": 500},
		Machine: map[string]any{"cores": 2.0, "goos": "linux", "goarch": "amd64", "emulator": "buckets on"},
		Checks:  []figure.Check{figure.AtMost("all Synced", 250, 240, "s", "qps | bound"), figure.AtMost("plateau", 1.5, 2, "s", "issue 16")},
		Charts:  []figure.Chart{{Title: "Pods", Series: []figure.Series{{Name: "Synced", X: []float64{0, 1}, Y: []float64{0, 1}}}}, {Title: "RSS"}}}
	rollout := figure.Figure{Name: "6-nodeeni-rollout-40", Results: map[string]any{"secondsUntilReady": 2.5}}
	base := Baseline{About: "earlier figures", Entries: []BaselineEntry{
		{Figure: "7-pod-burst", What: "writes per pod", Previous: "3 + ledger", Original: "4.0", Source: "brief"},
		{Figure: "9-gone", What: "a figure not run", Previous: "1 s", Source: "README"},
	}}
	for _, tc := range []struct {
		name      string
		figs      []figure.Figure
		want      []string
		wantNot   []string
		wantFiles []string
	}{
		{"targets marked, the table's pipes escaped",
			[]figure.Figure{burst}, []string{
				"| 7-pod-burst | all Synced | ✗ 250 s ≤ 240 s | qps \\| bound |",
				"| 7-pod-burst | plateau | ✓ 1.5 s ≤ 2 s | issue 16 |",
				"Machine: 2 cores (linux/amd64)",
			}, nil, nil},
		{"the figures before shown beside their figure; the rest apart",
			[]figure.Figure{burst}, []string{
				"| 7-pod-burst | writes per pod | 3 + ledger | 4.0 | brief |",
				"## Earlier figures not measured in this run",
				"| 9-gone | a figure not run | 1 s | — | README |",
			}, nil, nil},
		{"charts written and linked",
			[]figure.Figure{burst}, []string{"![Pods](charts/7-pod-burst-1.svg)", "![RSS](charts/7-pod-burst-2.svg)"},
			nil, []string{"charts/7-pod-burst-1.svg", "charts/7-pod-burst-2.svg"}},
		{"a figure without targets, charts or earlier figures",
			[]figure.Figure{rollout}, []string{"## 6-nodeeni-rollout-40", "secondsUntilReady=2.5"},
			[]string{"## Targets", "| target | measured |", "Before:", "![", "Machine:"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md, files := Render(tc.figs, base)
			for _, w := range tc.want {
				if !strings.Contains(md, w) {
					t.Errorf("no %q in\n%s", w, md)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(md, w) {
					t.Errorf("%q in\n%s", w, md)
				}
			}
			if tc.wantFiles != nil && len(files) != len(tc.wantFiles) {
				t.Errorf("files %v, want %v", keys(files), tc.wantFiles)
			}
			for _, f := range tc.wantFiles {
				if !strings.HasPrefix(files[f], "<svg") {
					t.Errorf("file %s is no SVG: %.40q", f, files[f])
				}
			}
		})
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestBaseline: the committed baseline reads, and each entry says what
// it measured and where it came from.
func TestBaseline(t *testing.T) {
	var b Baseline
	dec := json.NewDecoder(strings.NewReader(string(baselineJSON)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		t.Fatal(err)
	}
	if len(b.Entries) == 0 {
		t.Fatal("no entries")
	}
	for _, e := range b.Entries {
		if e.Figure == "" || e.What == "" || e.Previous == "" || e.Source == "" {
			t.Errorf("entry without figure, what, previous or source: %+v", e)
		}
	}
}
