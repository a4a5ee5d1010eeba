// Command bench-report turns the figures test/bench wrote
// (bench/results/*.json) into bench/results/report.md and report.json.
package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/eni-operator/eni-operator/hack/bench-report/figure"
)

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
	paths, err := filepath.Glob(filepath.Join(dir, "[0-9]*.json"))
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return fmt.Errorf("no figures in %s: run `make bench` first", dir)
	}
	slices.Sort(paths)
	var figs []figure.Figure
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var f figure.Figure
		if err := json.Unmarshal(raw, &f); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		figs = append(figs, f)
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# eni-operator benchmarks\n\nMachine: %v cores (%v/%v). EC2: %v. Operator: a separate process at its default flags.\n\n",
		figs[0].Machine["cores"], figs[0].Machine["goos"], figs[0].Machine["goarch"], figs[0].Machine["emulator"])
	md.WriteString("| figure | parameters | results | EC2 calls |\n|---|---|---|---|\n")
	for _, f := range figs {
		fmt.Fprintf(&md, "| %s | %s | %s | %s |\n", f.Name, kv(f.Parameters), kv(f.Results), calls(f.EC2Calls))
	}
	for _, f := range figs {
		for _, n := range f.Notes {
			fmt.Fprintf(&md, "\n- %s: %s", f.Name, n)
		}
	}
	md.WriteString("\n\nRerun one figure: `make bench FIGURE=TaggingBurst` (or Churn, RestartAndMemory, NodeENIRollout).\n")
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	raw, _ := json.MarshalIndent(figs, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "report.json"), raw, 0o644); err != nil {
		return err
	}
	fmt.Print(md.String())
	return nil
}

func kv(m map[string]any) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := m[k]
		if f, ok := v.(float64); ok {
			if f == float64(int64(f)) {
				v = int64(f)
			} else {
				v = fmt.Sprintf("%.3g", f)
			}
		}
		parts[i] = fmt.Sprintf("%s=%v", k, v)
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
