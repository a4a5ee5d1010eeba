package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestMetrics scrapes the operator's /metrics as Prometheus would: over
// HTTPS through the chart's Service, with a ServiceAccount token the API
// server issues (TokenRequest, what a pod's projected token is). A token
// of a ServiceAccount bound to the chart's metrics-reader ClusterRole
// reads them; one without that binding is forbidden; no token is refused.
func TestMetrics(t *testing.T) {
	requireNode(t)
	installChart(t)

	kubectl(t, "create", "serviceaccount", "-n", namespace, "scraper")
	kubectl(t, "create", "serviceaccount", "-n", namespace, "stranger")
	kubectl(t, "create", "clusterrolebinding", "e2e-scraper", "--clusterrole", release+"-metrics-reader",
		"--serviceaccount", namespace+":scraper")
	svc := kubectl(t, "get", "service", "-n", namespace, release+"-metrics", "-o",
		"jsonpath={.spec.clusterIP}:{.spec.ports[0].port}")
	url := "https://" + svc + "/metrics"
	scraper := kubectl(t, "create", "token", "-n", namespace, "scraper")
	stranger := kubectl(t, "create", "token", "-n", namespace, "stranger")

	// The certificate is the operator's self-signed one: skip its check,
	// as the chart's ServiceMonitor does by default.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed, as in the chart
	}}
	scrape := func(token string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(token))
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	// RBAC bindings reach the authorizer's cache within a few seconds.
	eventually(t, 30*time.Second, "metrics for the metrics reader", func() error {
		code, body, err := scrape(scraper)
		if err == nil && (code != http.StatusOK || !strings.Contains(body, "eni_operator_nodeeni_enis_managed")) {
			err = fmt.Errorf("HTTP %d: %.200s", code, body)
		}
		return err
	})
	for _, c := range []struct {
		who, token string
		want       int
	}{{"a ServiceAccount without metrics-reader", stranger, http.StatusForbidden}, {"no token", "", http.StatusUnauthorized}} {
		code, body, err := scrape(c.token)
		if err != nil || code != c.want {
			t.Errorf("%s: got HTTP %d (%v) %.200s, want %d", c.who, code, err, body, c.want)
		}
	}
}
