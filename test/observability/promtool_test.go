package observability

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// promtool builds (once, then cached) and returns promtool of the version
// the Makefile pins, through hack/promtool-binary.sh.
func promtool(t *testing.T) string {
	t.Helper()
	r := testenv.Root(t)
	cmd := exec.Command(filepath.Join(r, "hack", "promtool-binary.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/promtool-binary.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func runPromtool(t *testing.T, bin, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
}

// The rules pass `promtool check rules` (syntax, templates, lint) and
// `promtool test rules` (alerts_test.yaml: when each alert fires), and
// every dashboard query is valid PromQL (checked as a recording rule).
func TestRulesPassPromtool(t *testing.T) {
	bin := promtool(t)
	dir := filepath.Join(testenv.Root(t), "config", "prometheus")
	runPromtool(t, bin, dir, "check", "rules", "--lint=all", "--lint-fatal", "alerts.yaml")
	runPromtool(t, bin, dir, "test", "rules", "alerts_test.yaml")

	var b strings.Builder
	b.WriteString("groups:\n- name: dashboard\n  rules:\n")
	for i, q := range dashboardQueries(t) {
		fmt.Fprintf(&b, "  - record: dashboard:query_%d\n    # %s\n    expr: %q\n", i, q.Panel, grafanaVars.Replace(q.Expr))
	}
	f := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, bin, dir, "check", "rules", f)
}

// The Makefile's PROMTOOL_VERSION and hack/promtool-binary.sh's default
// are the same version (the tests call the script without make).
func TestPromtoolVersionPinnedOnce(t *testing.T) {
	mk := regexp.MustCompile(`(?m)^PROMTOOL_VERSION \?= (\S+)$`).FindSubmatch(read(t, "Makefile"))
	sh := regexp.MustCompile(`(?m)^PROMTOOL_VERSION="\$\{PROMTOOL_VERSION:-(\S+)\}"$`).FindSubmatch(read(t, "hack/promtool-binary.sh"))
	if mk == nil || sh == nil || string(mk[1]) != string(sh[1]) {
		t.Errorf("PROMTOOL_VERSION: Makefile %q, hack/promtool-binary.sh %q", mk, sh)
	}
}
