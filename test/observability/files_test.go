package observability

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/eni-operator/eni-operator/internal/kit/cachedbin"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// The chart ships copies of config/prometheus' rule file and dashboard:
// byte for byte the same (copy them over after editing the sources).
func TestChartCopiesAreIdentical(t *testing.T) {
	for src, dst := range map[string]string{rulesFile: chartRulesFile, dashboardFile: chartDashboardFile} {
		if !bytes.Equal(read(t, src), read(t, dst)) {
			t.Errorf("%s differs from its source %s: cp %s %s", dst, src, src, dst)
		}
	}
}

// config/prometheus/prometheusrule.yaml wraps the rule file's groups for
// the Prometheus Operator: the same groups.
func TestPrometheusRuleOfConfigIsTheRuleFile(t *testing.T) {
	var pr struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       any    `json:"spec"`
	}
	if err := sigsyaml.Unmarshal(read(t, promRuleFile), &pr); err != nil {
		t.Fatal(err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Errorf("%s is a %s %s", promRuleFile, pr.APIVersion, pr.Kind)
	}
	if want := ruleFileObject(t); !reflect.DeepEqual(pr.Spec, want) {
		t.Errorf("%s's spec differs from %s:\n%s", promRuleFile, rulesFile, mustJSON(t, pr.Spec))
	}
}

func ruleFileObject(t *testing.T) any {
	t.Helper()
	var v any
	if err := sigsyaml.Unmarshal(read(t, rulesFile), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// normalized is v as JSON would decode it, so YAML and JSON decoders'
// number types compare equal.
func normalized(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal([]byte(mustJSON(t, v)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every alert has a severity, a summary, a description and a runbook_url
// naming a section of docs/operations.md that exists.
func TestEveryAlertHasARunbookSection(t *testing.T) {
	anchors := markdownAnchors(string(read(t, runbookFile)))
	for _, r := range alertRules(t) {
		if r.Alert == "" {
			continue
		}
		if s := r.Labels["severity"]; s != "critical" && s != "warning" && s != "info" {
			t.Errorf("%s: severity %q", r.Alert, s)
		}
		for _, a := range []string{"summary", "description"} {
			if r.Annotations[a] == "" {
				t.Errorf("%s has no %s", r.Alert, a)
			}
		}
		url := r.Annotations["runbook_url"]
		anchor, ok := strings.CutPrefix(url, runbookURLPrefix)
		if !ok {
			t.Errorf("%s: runbook_url %q is not %s<section>", r.Alert, url, runbookURLPrefix)
			continue
		}
		if anchor != strings.ToLower(r.Alert) {
			t.Errorf("%s: runbook_url's anchor %q is not the alert's name in lower case", r.Alert, anchor)
		}
		if !anchors[anchor] {
			t.Errorf("%s: %s has no section with anchor #%s (a heading \"### %s\")", r.Alert, runbookFile, anchor, r.Alert)
		}
	}
}

// markdownAnchors are the anchors GitHub gives the headings of a
// Markdown document: lower case, punctuation other than - and _ dropped,
// spaces turned into -.
func markdownAnchors(doc string) map[string]bool {
	heading := regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*$`)
	drop := regexp.MustCompile(`[^\p{L}\p{N}\s_-]`)
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(doc, -1) {
		a := drop.ReplaceAllString(strings.ToLower(m[1]), "")
		out[strings.ReplaceAll(a, " ", "-")] = true
	}
	return out
}

// Every alert has a promtool unit test where it fires and one where it
// stays silent (exp_alerts empty).
func TestEveryAlertIsUnitTested(t *testing.T) {
	var f struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := sigsyaml.Unmarshal(read(t, rulesTestFile), &f); err != nil {
		t.Fatal(err)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range f.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	for _, r := range alertRules(t) {
		if r.Alert != "" && (!fires[r.Alert] || !silent[r.Alert]) {
			t.Errorf("%s: %s has no case where it fires (%v) or none where it does not (%v)", r.Alert, rulesTestFile, fires[r.Alert], silent[r.Alert])
		}
	}
}

// The chart renders nothing of this by default; with
// grafanaDashboard.enabled and prometheusRule.enabled it renders the
// dashboard ConfigMap (labelled for the Grafana sidecar) and the
// PrometheusRule, both with the files' content unchanged.
func TestChartRendersDashboardAndRules(t *testing.T) {
	r := testenv.Root(t)
	helm, err := cachedbin.Helm(context.Background(), r, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	render := func(args ...string) []*unstructured.Unstructured {
		t.Helper()
		home := t.TempDir()
		cmd := exec.Command(helm, append([]string{"template", "mon", filepath.Join(r, "charts", "eni-operator"), "--namespace", "monitoring-test"}, args...)...)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("helm template %v: %v\n%s", args, err, stderr.String())
		}
		var objs []*unstructured.Unstructured
		dec := yaml.NewYAMLOrJSONDecoder(&stdout, 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if err.Error() == "EOF" {
					return objs
				}
				t.Fatal(err)
			}
			if u.Object != nil {
				objs = append(objs, u)
			}
		}
	}
	find := func(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
		for _, o := range objs {
			if o.GetKind() == kind && (name == "" || o.GetName() == name) {
				return o
			}
		}
		return nil
	}

	def := render()
	if o := find(def, "PrometheusRule", ""); o != nil {
		t.Error("the default values render a PrometheusRule")
	}
	for _, o := range def {
		if _, ok := o.GetLabels()["grafana_dashboard"]; ok {
			t.Errorf("the default values render a dashboard: %s %s", o.GetKind(), o.GetName())
		}
	}

	objs := render("--set", "grafanaDashboard.enabled=true", "--set", "prometheusRule.enabled=true",
		"--set", "prometheusRule.labels.release=kube-prometheus-stack", "--set", "grafanaDashboard.folder=Network")
	cm := find(objs, "ConfigMap", "mon-eni-operator-dashboard")
	if cm == nil {
		t.Fatal("no dashboard ConfigMap mon-eni-operator-dashboard")
	}
	if cm.GetLabels()["grafana_dashboard"] != "1" || cm.GetAnnotations()["grafana_folder"] != "Network" || cm.GetNamespace() != "monitoring-test" {
		t.Errorf("dashboard ConfigMap: namespace %q, labels %v, annotations %v", cm.GetNamespace(), cm.GetLabels(), cm.GetAnnotations())
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", "eni-operator.json")
	if data != strings.TrimRight(string(read(t, dashboardFile)), "\n") {
		t.Errorf("the ConfigMap's eni-operator.json is not %s", dashboardFile)
	}
	pr := find(objs, "PrometheusRule", "mon-eni-operator")
	if pr == nil {
		t.Fatal("no PrometheusRule mon-eni-operator")
	}
	if pr.GetAPIVersion() != "monitoring.coreos.com/v1" || pr.GetLabels()["release"] != "kube-prometheus-stack" {
		t.Errorf("PrometheusRule: %s, labels %v", pr.GetAPIVersion(), pr.GetLabels())
	}
	if want := ruleFileObject(t); !reflect.DeepEqual(normalized(t, pr.Object["spec"]), want) {
		t.Errorf("the PrometheusRule's spec is not %s:\n%s", rulesFile, mustJSON(t, pr.Object["spec"]))
	}
}

// config/prometheus builds with kustomize (kubectl's) into the
// PrometheusRule and the dashboard ConfigMap for the Grafana sidecar.
func TestKustomizeBuildsMonitoring(t *testing.T) {
	out := testenv.Kustomize(t, "prometheus")
	var cm, pr *unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		switch u.GetKind() {
		case "ConfigMap":
			cm = u
		case "PrometheusRule":
			pr = u
		}
	}
	if cm == nil || pr == nil {
		t.Fatalf("kustomize built ConfigMap %v, PrometheusRule %v", cm != nil, pr != nil)
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", "eni-operator.json")
	if cm.GetLabels()["grafana_dashboard"] != "1" || data != string(read(t, dashboardFile)) {
		t.Errorf("dashboard ConfigMap %s: labels %v, data equal to %s: %v", cm.GetName(), cm.GetLabels(), dashboardFile, data == string(read(t, dashboardFile)))
	}
	if !reflect.DeepEqual(normalized(t, pr.Object["spec"]), ruleFileObject(t)) {
		t.Errorf("the kustomized PrometheusRule's spec is not %s", rulesFile)
	}
}
