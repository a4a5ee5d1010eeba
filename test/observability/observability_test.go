// Package observability checks the monitoring content eni-operator ships
// (config/prometheus and its copies in the Helm chart): the alerting
// rules pass promtool's checks and unit tests, every alert links to a
// section of the runbook (docs/operations.md), the chart renders the
// dashboard and the rules unchanged, and every metric the dashboard and
// the rules query is one the binaries really expose, scraped from the
// whole operator (operator.NewManager, as the binary builds it) and from
// the eni-agent binary running against a real control plane and the EC2
// emulator.
package observability

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"sigs.k8s.io/yaml"
)

// The files, relative to the repository's root.
const (
	rulesFile          = "config/prometheus/alerts.yaml"
	rulesTestFile      = "config/prometheus/alerts_test.yaml"
	dashboardFile      = "config/prometheus/dashboard.json"
	promRuleFile       = "config/prometheus/prometheusrule.yaml"
	chartRulesFile     = "charts/eni-operator/files/alerts/eni-operator.rules.yaml"
	chartDashboardFile = "charts/eni-operator/files/dashboards/eni-operator.json"
	runbookFile        = "docs/operations.md"
	runbookURLPrefix   = "https://github.com/eni-operator/eni-operator/blob/main/docs/operations.md#"
)

func read(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ruleFile is a Prometheus rule file, as much of it as the tests read.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func alertRules(t *testing.T) []rule {
	t.Helper()
	var f ruleFile
	if err := yaml.UnmarshalStrict(read(t, rulesFile), &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no rules", rulesFile)
	}
	return out
}

// panelQuery is one query of the dashboard, named by its panel.
type panelQuery struct{ Panel, Expr string }

func dashboardQueries(t *testing.T) []panelQuery {
	t.Helper()
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(read(t, dashboardFile), &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var out []panelQuery
	for _, p := range d.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			out = append(out, panelQuery{p.Title, q.Expr})
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no queries", dashboardFile)
	}
	return out
}

// grafanaVars stand for the dashboard's Grafana variables so its queries
// are plain PromQL.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// The metric names a PromQL expression reads, found with regular
// expressions rather than Prometheus' parser (github.com/prometheus/
// prometheus would pull ~40 dependency upgrades into go.mod): string
// literals, label matchers ({...}), ranges and subqueries ([...]) and
// grouping clauses (by/without/on/ignoring/group_left/group_right (...))
// are blanked, then every remaining identifier that is not a keyword, an
// aggregation operator or a function call (a name followed by "(") and
// not part of a number or a duration is a metric name. promtool parses
// the same expressions (TestRulesPassPromtool), so a name this misses
// would be a syntax error there.
var (
	promStrings  = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	promRanges   = regexp.MustCompile(`\[[^\[\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promKeywords = map[string]bool{
		"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true, "without": true,
		"on": true, "ignoring": true, "group_left": true, "group_right": true, "atan2": true,
		"sum": true, "min": true, "max": true, "avg": true, "count": true, "stddev": true, "stdvar": true,
		"topk": true, "bottomk": true, "quantile": true, "count_values": true, "group": true,
		"limitk": true, "limit_ratio": true, "inf": true, "nan": true, "Inf": true, "NaN": true,
	}
)

func metricNames(expr string) []string {
	s := promStrings.ReplaceAllString(expr, `""`)
	s = promMatchers.ReplaceAllString(s, " ")
	s = promRanges.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range promIdent.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsAny(s[loc[0]-1:loc[0]], "0123456789.") {
			continue // 1e3, 0.5, 10m
		}
		if rest := strings.TrimLeft(s[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") || promKeywords[name] {
			continue
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`absent(eni_operator_ec2_rate_limit_qps)`:                                               {"eni_operator_ec2_rate_limit_qps"},
		`up{job=~".*eni-operator.*", job!~".*agent.*"} == 0`:                                    {"up"},
		`sum by (operation) (rate(a_total[5m])) / sum by (operation) (rate(b_total[5m])) > 0.1`: {"a_total", "b_total"},
		`count(x) > 1 unless on() (max(leader_election_master_status{name="a.b"}) == 1)`:        {"x", "leader_election_master_status"},
		`histogram_quantile(0.99, sum by (operation, le) (rate(h_bucket[$__rate_interval])))`:   {"h_bucket"},
		`sum(rate(e{code!~"DryRun|Invalid.*"}[10m])) or on() vector(0)`:                         {"e"},
		`a unless a offset 10m`:                                             {"a"},
		`max by (shard) (s) > 0.85 * 1048576 and 1e3 < s2`:                  {"s", "s2"},
		`sum(delta(q{controller="pod-tagger"}[15m:1m])) without (instance)`: {"q"},
		`sum(x) by (le)`: {"x"},
	} {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("metricNames(%q) = %q, want %q", expr, got, want)
		}
	}
}
