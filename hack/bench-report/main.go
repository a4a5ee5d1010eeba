// Command bench-report turns the figures test/bench wrote
// (bench/results/*.json) into bench/results/report.md, its charts
// (bench/results/charts/*.svg) and report.json, each figure beside the
// figures measured before (baseline.json) and its targets marked ✓ or ✗.
package main

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/eni-operator/eni-operator/hack/bench-report/chart"
	"github.com/eni-operator/eni-operator/hack/bench-report/figure"
)

//go:embed baseline.json
var baselineJSON []byte

// Baseline is the figures measured before, with where each came from.
type Baseline struct {
	About   string          `json:"about"`
	Entries []BaselineEntry `json:"entries"`
}

// BaselineEntry is one earlier measurement, shown beside figure Figure.
type BaselineEntry struct {
	Figure   string `json:"figure"`
	What     string `json:"what"`
	Previous string `json:"previous"`
	Original string `json:"original,omitempty"`
	Source   string `json:"source"`
}

func main() {
	dir := "bench/results"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := run(dir); err != nil {
		fmt.Fprintln(os.Stderr, "bench-report:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	var base Baseline
	if err := json.Unmarshal(baselineJSON, &base); err != nil {
		return fmt.Errorf("baseline.json: %w", err)
	}
	figs, err := load(dir)
	if err != nil {
		return err
	}
	md, files := Render(figs, base)
	if err := os.MkdirAll(filepath.Join(dir, "charts"), 0o755); err != nil {
		return err
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(md), 0o644); err != nil {
		return err
	}
	raw, _ := json.MarshalIndent(figs, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "report.json"), raw, 0o644); err != nil {
		return err
	}
	fmt.Print(md)
	return nil
}

// load reads the figures in dir, in their names' order.
func load(dir string) ([]figure.Figure, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "[0-9]*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no figures in %s: run `make bench` first", dir)
	}
	slices.Sort(paths)
	var figs []figure.Figure
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var f figure.Figure
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		figs = append(figs, f)
	}
	return figs, nil
}

// Render is the report: a summary of every target, then each figure
// with its targets, the figures before it, its results and its charts.
// It returns the Markdown and the chart files (name relative to the
// report -> SVG).
func Render(figs []figure.Figure, base Baseline) (string, map[string]string) {
	files := map[string]string{}
	var md strings.Builder
	md.WriteString("# eni-operator benchmarks\n\n")
	if len(figs) > 0 && len(figs[0].Machine) > 0 {
		m := figs[0].Machine
		fmt.Fprintf(&md, "Machine: %v cores (%v/%v), %v. EC2: %v. Operator: a separate process at its default flags.\n\n",
			m["cores"], m["goos"], m["goarch"], m["date"], m["emulator"])
	}
	header := "## Targets\n\n| figure | target | measured | bound from |\n|---|---|---|---|\n"
	for _, f := range figs {
		for _, c := range f.Checks {
			md.WriteString(header)
			header = ""
			fmt.Fprintf(&md, "| %s | %s | %s | %s |\n", f.Name, cell(c.What), c.String(), cell(c.Why))
		}
	}
	for _, f := range figs {
		renderFigure(&md, f, base, files)
	}
	shown := map[string]bool{}
	for _, f := range figs {
		shown[f.Name] = true
	}
	var rest []BaselineEntry
	for _, e := range base.Entries {
		if !shown[e.Figure] {
			rest = append(rest, e)
		}
	}
	if len(rest) > 0 {
		md.WriteString("\n## Earlier figures not measured in this run\n\n")
		baselineTable(&md, rest)
	}
	fmt.Fprintf(&md, "\n%s\n\nRerun one figure: `make bench FIGURE=PodBurst` (or TaggingBurst, Churn, RestartAndMemory, NodeENIRollout, NodeENIRollout40, NewENIs, LeaderTakeover).\n", base.About)
	return md.String(), files
}

func renderFigure(md *strings.Builder, f figure.Figure, base Baseline, files map[string]string) {
	fmt.Fprintf(md, "\n## %s\n\nParameters: %s\n\n", f.Name, inline(f.Parameters))
	if len(f.Checks) > 0 {
		md.WriteString("| target | measured |\n|---|---|\n")
		for _, c := range f.Checks {
			fmt.Fprintf(md, "| %s | %s |\n", cell(c.What), c.String())
		}
		md.WriteString("\n")
	}
	var before []BaselineEntry
	for _, e := range base.Entries {
		if e.Figure == f.Name {
			before = append(before, e)
		}
	}
	if len(before) > 0 {
		md.WriteString("Before:\n\n")
		baselineTable(md, before)
		md.WriteString("\n")
	}
	fmt.Fprintf(md, "| now | EC2 calls |\n|---|---|\n| %s | %s |\n", kv(f.Results), calls(f.EC2Calls))
	for _, n := range f.Notes {
		fmt.Fprintf(md, "\n- %s", n)
	}
	md.WriteString("\n")
	for i, c := range f.Charts {
		name := fmt.Sprintf("charts/%s-%d.svg", f.Name, i+1)
		files[name] = chart.SVG(c)
		fmt.Fprintf(md, "\n![%s](%s)\n", cell(c.Title), name)
	}
}

func baselineTable(md *strings.Builder, entries []BaselineEntry) {
	md.WriteString("| figure | what | previous | originals | source |\n|---|---|---|---|---|\n")
	for _, e := range entries {
		orig := e.Original
		if orig == "" {
			orig = "—"
		}
		fmt.Fprintf(md, "| %s | %s | %s | %s | %s |\n", e.Figure, cell(e.What), cell(e.Previous), cell(orig), cell(e.Source))
	}
}

// cell keeps a value inside its Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func inline(m map[string]any) string {
	return strings.ReplaceAll(kv(m), "<br>", ", ")
}

func kv(m map[string]any) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := m[k]
		if f, ok := v.(float64); ok {
			v = figure.Num(f)
		}
		parts[i] = cell(fmt.Sprintf("%s=%v", k, v))
	}
	return strings.Join(parts, "<br>")
}

func calls(m map[string]int) string {
	if len(m) == 0 {
		return "—"
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, "<br>")
}
