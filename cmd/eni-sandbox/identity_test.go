package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// operatorSA is the operator's ServiceAccount as the API server names it.
const operatorSA = "system:serviceaccount:eni-operator:eni-operator"

// checkOperatorIdentity checks that the report says the operator runs as
// its ServiceAccount under the chart's RBAC and admission policies, and
// that the cluster holds them: that identity may not relabel a pod.
func checkOperatorIdentity(t *testing.T, report, kubeconfig string) {
	t.Helper()
	line := regexp.MustCompile(`(?m)^\s+operator runs as (.*)$`).FindStringSubmatch(report)
	if line == nil || !strings.HasPrefix(line[1], operatorSA+" (groups system:serviceaccounts, system:serviceaccounts:eni-operator, system:authenticated): the ServiceAccount, with the chart's RBAC and admission policies") {
		t.Errorf("the report does not say the operator runs as %s under the chart's RBAC and policies:\n%s", operatorSA, report)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: operatorSA,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:eni-operator", "system:authenticated"}}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().Pods("demo").Patch(context.Background(), "web-0", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"stolen":"token"}}}`), metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'eni-operator-writes'") {
		t.Errorf("patching a demo pod's labels as %s: %v; want refused by ValidatingAdmissionPolicy eni-operator-writes", operatorSA, err)
	}
}
