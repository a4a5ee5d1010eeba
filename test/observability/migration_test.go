package observability

import (
	"fmt"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"sigs.k8s.io/yaml"
)

// The originals' metrics and what replaces each (testdata/
// metrics-migration.yaml) are data: docs/migration.md's tables are written from
// them, and TestEveryMetricUsedIsExposed holds every metric they name to
// the operator's and the agent's real /metrics, so a dashboard or alert
// rewritten by the table keeps working.

const metricsMigrationFile = "test/observability/testdata/metrics-migration.yaml"

type originalMetrics struct {
	Original string `json:"original"`
	Source   string `json:"source"`
	Metrics  []struct {
		Old    string   `json:"old"`
		Type   string   `json:"type"`
		Labels []string `json:"labels"`
		New    string   `json:"new"`
		None   string   `json:"none"`
		See    string   `json:"see"`
		Note   string   `json:"note"`
	} `json:"metrics"`
	Dashboard []struct {
		Panel string   `json:"panel"`
		Ours  []string `json:"ours"`
	} `json:"dashboard"`
}

func metricsMigration(t *testing.T) []originalMetrics {
	t.Helper()
	var out []originalMetrics
	if err := yaml.UnmarshalStrict(read(t, metricsMigrationFile), &out); err != nil {
		t.Fatalf("%s: %v", metricsMigrationFile, err)
	}
	for _, o := range out {
		for _, m := range o.Metrics {
			if (m.New == "") == (m.None == "") || m.Type == "" {
				t.Errorf("%s %s: give a type, and either new or none", o.Original, m.Old)
			}
		}
	}
	return out
}

// migrationQueries are the expressions the table gives users in place of
// the originals' metrics, for the exposure test.
func migrationQueries(t *testing.T) []panelQuery {
	t.Helper()
	var out []panelQuery
	for _, o := range metricsMigration(t) {
		for _, m := range o.Metrics {
			for _, q := range []string{m.New, m.See} {
				if q != "" {
					out = append(out, panelQuery{"metrics table: " + o.Original + " " + m.Old, q})
				}
			}
			if m.New != "" && len(metricNames(m.New)) == 0 || m.See != "" && len(metricNames(m.See)) == 0 {
				t.Errorf("%s %s: names no metric", o.Original, m.Old)
			}
		}
	}
	return out
}

// The tables of the originals' metrics in docs/migration.md are written from
// the data: ENI_UPDATE_README=1 rewrites them, otherwise a difference fails.
func TestMetricsMigrationTablesInDocs(t *testing.T) {
	var sections []testenv.GeneratedSection
	for _, o := range metricsMigration(t) {
		sections = append(sections, testenv.GeneratedSection{
			Begin:   "<!-- BEGIN metrics of " + o.Original + ": generated from " + metricsMigrationFile + " -->",
			End:     "<!-- END metrics of " + o.Original + " -->",
			Content: metricsTable(o),
		})
	}
	testenv.CheckDoc(t, "docs/migration.md", sections)
}

func metricsTable(o originalMetrics) string {
	var s strings.Builder
	if len(o.Dashboard) > 0 {
		fmt.Fprintf(&s, "| %s dashboard panel | eni-operator dashboard panels |\n|---|---|\n", o.Original)
		for _, p := range o.Dashboard {
			fmt.Fprintf(&s, "| %s | %s |\n", p.Panel, strings.Join(p.Ours, "; "))
		}
		s.WriteString("\n")
	}
	fmt.Fprintf(&s, "| %s metric (%s) | type, labels | eni-operator | note |\n|---|---|---|---|\n", o.Original, o.Source)
	for _, m := range o.Metrics {
		kind := m.Type
		if len(m.Labels) > 0 {
			kind += ": `" + strings.Join(m.Labels, "`, `") + "`"
		}
		to, note := "`"+m.New+"`", m.Note
		if m.None != "" {
			to, note = "no equivalent", m.None
			if m.See != "" {
				note += "; see `" + m.See + "`"
			}
		}
		fmt.Fprintf(&s, "| `%s` | %s | %s | %s |\n", m.Old, kind, strings.ReplaceAll(to, "|", `\|`), strings.ReplaceAll(note, "|", `\|`))
	}
	return s.String()
}

// Every panel of the original's dashboard is shown by panels of this one
// that exist.
func TestOriginalDashboardPanelsCovered(t *testing.T) {
	titles := map[string]bool{}
	for _, q := range dashboardQueries(t) {
		titles[q.Panel] = true
	}
	for _, o := range metricsMigration(t) {
		for _, p := range o.Dashboard {
			if len(p.Ours) == 0 {
				t.Errorf("%s panel %q: no panel of ours", o.Original, p.Panel)
			}
			for _, title := range p.Ours {
				if !titles[title] {
					t.Errorf("%s panel %q: %s has no panel %q", o.Original, p.Panel, dashboardFile, title)
				}
			}
		}
	}
}
