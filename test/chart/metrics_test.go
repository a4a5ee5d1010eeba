package chart

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/eni-operator/eni-operator/internal/operator"
)

// The operator's metrics endpoint with the defaults (--metrics-secure):
// HTTPS, no answer without a token, 403 for a ServiceAccount that is not
// a metrics reader, the metrics for one the chart's readers value bound
// to <release>-metrics-reader. The operator is the real manager
// (operator.NewManager), as the operator's ServiceAccount with the
// chart's RBAC, running only its metrics and probes.
func TestSecureMetrics(t *testing.T) {
	c := newChart(t)
	objs := c.renderRelease(t, "mtr", "operator.metrics.readers[0].kind=ServiceAccount",
		"operator.metrics.readers[0].name=scraper", "operator.metrics.readers[0].namespace="+namespace)
	install(t, objs, rbacKinds...)
	cs, err := kubernetes.NewForConfig(shared.Env(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	token := func(sa string) string {
		t.Helper()
		if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token of %s: %v", sa, err)
		}
		return tr.Status.Token
	}
	scraper, stranger := token("scraper"), token("stranger")

	// No AWS is reached: the tagger and the NodeENI controller are off.
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	cfg := operator.DefaultConfig()
	if !cfg.MetricsSecure {
		t.Fatal("--metrics-secure must default to true")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cfg.MetricsAddr, cfg.ProbeAddr, cfg.ClusterName, cfg.EnableTagger = addr, "0", "", false
	cfg.EC2.VPCID = "vpc-0123456789abcdef0"
	mgr, err := operator.NewManager(ctx, asServiceAccount(t, namespace, "mtr-eni-operator"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }() //nolint:errcheck // waits for the manager to stop; how it stopped is not what this test checks

	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed, as the ServiceMonitor
	get := func(scheme, bearer string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, scheme+"://"+addr+"/metrics", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := insecure.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		code, _, err := get("https", scraper)
		return err == nil && code == http.StatusOK, nil
	}); err != nil {
		code, body, err := get("https", scraper)
		t.Fatalf("a metrics reader never got the metrics: %d %s %v", code, body, err)
	}
	for _, tc := range []struct {
		what, scheme, token string
		want                int
	}{
		{"no token", "https", "", http.StatusUnauthorized},
		{"a bad token", "https", "not-a-token", http.StatusUnauthorized},
		{"a ServiceAccount that is no metrics reader", "https", stranger, http.StatusForbidden},
		{"a metrics reader", "https", scraper, http.StatusOK},
	} {
		code, body, err := get(tc.scheme, tc.token)
		if err != nil || code != tc.want {
			t.Errorf("%s: %d %v; want %d", tc.what, code, err, tc.want)
		}
		if code == http.StatusOK && !strings.Contains(body, "controller_runtime") {
			t.Errorf("%s: no metrics in %.200s", tc.what, body)
		}
	}
	if code, _, err := get("http", ""); err == nil && code == http.StatusOK {
		t.Error("the metrics are served over plain HTTP")
	}
}
