// Package chart tests the install artefacts: the plain manifests of
// config/ (kustomize) and the Helm chart charts/eni-operator: helm lint,
// helm template with default and non-default values, the rendered
// objects applied to a real API server with a server-side dry run, the
// rendered operator arguments parsed by the operator's own flags, and
// the chart's values kept in step with the operator's flags.
package chart

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/eni-operator/eni-operator/internal/kit/cachedbin"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/operator"
)

// shared is the package's control plane, started by the first test
// that needs one.
var shared testenv.Shared

func TestMain(m *testing.M) { testenv.Main(m, &shared) }

const (
	namespace   = "eni-operator"
	kubeVersion = "1.37.1" // the test control plane's
)

type chart struct {
	root, dir, helm string
}

func newChart(t *testing.T) chart {
	t.Helper()
	root := testenv.Root(t)
	h, err := cachedbin.Helm(context.Background(), root, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	return chart{root: root, dir: filepath.Join(root, "charts", "eni-operator"), helm: h}
}

func (c chart) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(c.helm, args...)
	// Keep helm's own state (repositories, cache) out of the user's home.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// render runs helm template (CRDs included) and decodes the objects.
func (c chart) render(t *testing.T, values ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", "rel", c.dir, "--namespace", namespace, "--include-crds", "--kube-version", kubeVersion}
	for _, v := range values {
		args = append(args, "-f", v)
	}
	return decode(t, c.run(t, args...))
}

func decode(t *testing.T, manifests string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("decoding the rendered manifests: %v", err)
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			return o
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

func has(objs []*unstructured.Unstructured, kind string) bool {
	return slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == kind })
}

// apply sends every object to the API server as a server-side apply with
// dryRun=All: the API server validates each against its schema (CRDs
// included), admission and RBAC escalation rules, and stores nothing.
func apply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	k8s, err := client.New(shared.Env(t).Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Namespaces must exist for a dry run of what goes into them.
	namespaces := map[string]bool{namespace: true}
	for _, o := range objs {
		if o.GetNamespace() != "" {
			namespaces[o.GetNamespace()] = true
		}
	}
	for name := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := k8s.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	for _, o := range objs {
		if err := k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.DryRunAll, client.ForceOwnership, client.FieldOwner("chart-test")); err != nil {
			t.Errorf("server-side dry run of %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

// installServiceMonitorCRD gives the API server a stand-in for the
// Prometheus Operator's ServiceMonitor CRD (group, kind and the fields the
// chart sets), so the optional ServiceMonitor can be dry-run applied too.
func installServiceMonitorCRD(t *testing.T) {
	t.Helper()
	k8s, err := client.New(shared.Env(t).Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(k8s.Scheme()); err != nil {
		t.Fatal(err)
	}
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors.monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "servicemonitors", Singular: "servicemonitor", Kind: "ServiceMonitor", ListKind: "ServiceMonitorList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Required: []string{"selector", "endpoints"}, XPreserveUnknownFields: &preserve},
					}}}}},
		},
	}
	ctx := context.Background()
	if err := k8s.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
			return false, nil
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("ServiceMonitor CRD not established: %v", err)
	}
}

// operatorFlags is the operator's command line as cmd/eni-operator binds
// it: internal/operator's flags, the zap logging flags and the two
// one-shot flags.
func operatorFlags() (*flag.FlagSet, *operator.Config) {
	c := operator.DefaultConfig()
	fs := flag.NewFlagSet("eni-operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.BindFlags(fs)
	var z zap.Options
	z.BindFlags(fs)
	fs.Bool("remove-pod-finalizers", false, "")
	fs.Bool("version", false, "")
	return fs, &c
}

// containerArgs returns the args of the first container of a workload.
func containerArgs(t *testing.T, o *unstructured.Unstructured) []string {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		t.Fatalf("%s %s has no containers", o.GetKind(), o.GetName())
	}
	var args []string
	for _, a := range cs[0].(map[string]any)["args"].([]any) {
		args = append(args, a.(string))
	}
	return args
}

// The rendered operator arguments are accepted by the operator's flag
// parser and pass its validation.
func checkOperatorArgs(t *testing.T, args []string) *operator.Config {
	t.Helper()
	fs, c := operatorFlags()
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the operator refuses the chart's arguments: %v\n%v", err, args)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the chart's arguments fail validation: %v", err)
	}
	return c
}

// checkAgentArgs runs the real eni-agent with the rendered arguments and
// --version, which exits right after parsing: an unknown flag or a bad
// value fails it.
func checkAgentArgs(t *testing.T, c chart, args []string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "eni-agent")
	build := exec.Command("go", "build", "-o", bin, "./cmd/eni-agent")
	build.Dir = c.root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building eni-agent: %v\n%s", err, out)
	}
	for i, a := range args {
		args[i] = strings.ReplaceAll(a, "$(NODE_NAME)", "node-1")
	}
	if out, err := exec.Command(bin, append(args, "--version")...).CombinedOutput(); err != nil {
		t.Fatalf("eni-agent refuses the chart's arguments %v: %v\n%s", args, err, out)
	}
}

func rulesOf(t *testing.T, path string) []any {
	t.Helper()
	var role map[string]any
	readYAML(t, path, &role)
	return role["rules"].([]any)
}

func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err1 := yaml.Marshal(a)
	jb, err2 := yaml.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return bytes.Equal(ja, jb)
}

func TestLint(t *testing.T) {
	c := newChart(t)
	c.run(t, "lint", "--strict", c.dir, "--kube-version", kubeVersion)
	c.run(t, "lint", "--strict", c.dir, "--kube-version", kubeVersion, "-f", filepath.Join(c.dir, "ci", "nondefault-values.yaml"))
}

func TestDefaultValues(t *testing.T) {
	c := newChart(t)
	objs := c.render(t)
	dep := find(t, objs, "Deployment", "rel-eni-operator")
	args := containerArgs(t, dep)
	cfg := checkOperatorArgs(t, args)
	if !cfg.LeaderElection.Enabled || cfg.LeaderElection.Namespace != namespace || !cfg.LeaderElection.ReleaseOnCancel {
		t.Errorf("two replicas without leader election: %+v", cfg.LeaderElection)
	}
	if s, _, _ := unstructured.NestedString(dep.Object, "spec", "strategy", "type"); s == "Recreate" {
		t.Error("a leader-elected Deployment should roll, not recreate")
	}
	if cfg.ClusterName != "" || cfg.MetricsAddr != ":8090" || cfg.ProbeAddr != ":8081" {
		t.Errorf("config %+v", cfg)
	}
	if !cfg.MetricsSecure || !slices.Contains(args, "--metrics-secure=true") {
		t.Errorf("the operator's metrics must be served with authentication and authorisation: %v", args)
	}
	pod, _, _ := unstructured.NestedMap(dep.Object, "spec", "template", "spec")
	checkSecure(t, pod)
	if !has(objs, "PodDisruptionBudget") || has(objs, "ServiceMonitor") {
		t.Error("default: a PodDisruptionBudget and no ServiceMonitor expected")
	}
	if svc := find(t, objs, "Service", "rel-eni-operator-metrics"); svc == nil {
		t.Error("no metrics Service")
	}

	// RBAC is the generated role (its ClusterRole; the namespaced part is
	// checked by TestChartRBACLeastPrivilege), and scrapers get a reader role.
	role := find(t, objs, "ClusterRole", "rel-eni-operator")
	if !sameJSON(t, role.Object["rules"], rulesOf(t, filepath.Join(c.root, "config", "rbac", "role.yaml"))) {
		t.Errorf("operator ClusterRole differs from config/rbac/role.yaml:\n%v", role.Object["rules"])
	}
	reader := find(t, objs, "ClusterRole", "rel-eni-operator-metrics-reader")
	if fmt.Sprint(reader.Object["rules"]) != "[map[nonResourceURLs:[/metrics] verbs:[get]]]" {
		t.Errorf("metrics reader rules %v", reader.Object["rules"])
	}
	// The agent is opt-in.
	// (The operator's own admission policy, rel-eni-operator-writes, is
	// always rendered.)
	for _, o := range objs {
		if o.GetKind() == "DaemonSet" || strings.HasSuffix(o.GetName(), "-agent-own-node") {
			t.Errorf("default values render the agent's %s %s; the agent is opt-in (agent.enabled)", o.GetKind(), o.GetName())
		}
	}
	for _, o := range objs {
		if strings.HasSuffix(o.GetName(), "-agent") {
			t.Errorf("default values render %s %s; the agent is opt-in", o.GetKind(), o.GetName())
		}
	}
	if !has(objs, "CustomResourceDefinition") {
		t.Error("no CRD rendered with --include-crds")
	}
	apply(t, objs)
}

func TestNonDefaultValues(t *testing.T) {
	c := newChart(t)
	installServiceMonitorCRD(t)
	objs := c.render(t, filepath.Join(c.dir, "ci", "nondefault-values.yaml"))
	dep := find(t, objs, "Deployment", "eni")
	args := containerArgs(t, dep)
	cfg := checkOperatorArgs(t, args)
	if cfg.LeaderElection.Enabled {
		t.Error("one replica: no leader election asked for")
	}
	if s, _, _ := unstructured.NestedString(dep.Object, "spec", "strategy", "type"); s != "Recreate" {
		t.Errorf("one replica without leader election must not overlap in a rollout: strategy %q", s)
	}
	if cfg.ClusterName != "prod-eu" || !cfg.Tagger.DryRun || !cfg.Tagger.PodFinalizer || len(cfg.Tagger.SubnetIDs) != 2 ||
		cfg.EC2.VPCID != "vpc-0123456789abcdef0" || !cfg.NodeENI.DisableCollector || cfg.Tagger.WatchNamespace != "shop" || cfg.Tagger.LedgerShards != 4 {
		t.Errorf("values did not reach the flags: %v", args)
	}
	if !slices.Contains(args, "--zap-encoder=console") || !slices.Contains(args, "--zap-log-level=debug") {
		t.Errorf("logging values not passed: %v", args)
	}
	if has(objs, "PodDisruptionBudget") {
		t.Error("a PodDisruptionBudget with one replica blocks node drains")
	}
	sa := find(t, objs, "ServiceAccount", "eni")
	if sa.GetAnnotations()["eks.amazonaws.com/role-arn"] != "arn:aws:iam::123456789012:role/eni-operator" {
		t.Errorf("IRSA annotation missing: %v", sa.GetAnnotations())
	}
	sm := find(t, objs, "ServiceMonitor", "eni")
	if sm.GetLabels()["release"] != "prometheus" {
		t.Errorf("ServiceMonitor labels %v", sm.GetLabels())
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if ep := eps[0].(map[string]any); ep["scheme"] != "https" || ep["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" ||
		fmt.Sprint(ep["tlsConfig"]) != "map[insecureSkipVerify:true]" {
		t.Errorf("the ServiceMonitor must scrape the secured endpoint with its token: %v", ep)
	}
	rb := find(t, objs, "ClusterRoleBinding", "eni-metrics-reader")
	if fmt.Sprint(rb.Object["subjects"]) != "[map[kind:ServiceAccount name:prometheus-k8s namespace:monitoring]]" {
		t.Errorf("metrics reader binding %v", rb.Object["subjects"])
	}
	// watch-namespace: pods in shop only; the ledger's 4 shards.
	for _, o := range objs {
		if o.GetKind() == "Role" && o.GetNamespace() == namespace {
			if got := fmt.Sprint(o.Object["rules"].([]any)[0].(map[string]any)["resourceNames"]); got != "[eni-tagger-cache-00 eni-tagger-cache-01 eni-tagger-cache-02 eni-tagger-cache-03]" {
				t.Errorf("ledger ConfigMaps %s", got)
			}
		}
	}
	if r := find(t, objs, "Role", "eni-watch"); r.GetNamespace() != "shop" {
		t.Errorf("pod rights in %s, want shop", r.GetNamespace())
	}
	ds := find(t, objs, "DaemonSet", "eni-agent")
	if sa, _, _ := unstructured.NestedString(ds.Object, "spec", "template", "spec", "serviceAccountName"); sa != "custom-agent" {
		t.Errorf("agent ServiceAccount %q", sa)
	}
	checkAgentArgs(t, c, containerArgs(t, ds))
	img := fmt.Sprint(ds.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"])
	if !strings.Contains(img, "registry.example.com/eni-agent:v9.9.9-agent") || !strings.Contains(img, "/host/sys") || !strings.Contains(img, "/etc/sriov-dp") {
		t.Errorf("agent values not applied: %s", img)
	}
	// DPDK: privileged, with the host's sysfs.
	agent := agentContainer(t, ds)
	if p, _, _ := unstructured.NestedBool(agent, "securityContext", "privileged"); !p {
		t.Error("with agent.dpdk.enabled the agent must be privileged (sysfs writes)")
	}
	if !hasHostPath(ds, "/host/sys") || !slices.Contains(containerArgs(t, ds), "--metrics-bind-address=0.0.0.0:9810") {
		t.Errorf("DPDK sysfs mount or metrics address missing: %v", containerArgs(t, ds))
	}
	tol, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "tolerations")
	if fmt.Sprint(tol) != "[map[effect:NoSchedule key:eni-operator.io/interfaces-not-ready operator:Exists] map[effect:NoSchedule key:multi-eni operator:Exists]]" {
		t.Errorf("agent tolerations %v", tol)
	}
	apply(t, objs)
}

// flagsSetByChart are derived from other values (addresses, leader
// election, cluster name, namespace) or are one-shot commands.
var flagsSetByChart = []string{
	"metrics-bind-address", "metrics-secure", "health-probe-bind-address", "cluster-name", "leader-elect", "leader-election-namespace",
	"leader-elect-lease-duration", "leader-elect-renew-deadline", "leader-elect-retry-period", "leader-elect-release-on-cancel",
	"cache-namespace", "remove-pod-finalizers", "version",
	"zap-log-level", "zap-encoder", "zap-stacktrace-level", "zap-time-encoding", "zap-devel",
}

// Every operator flag is a value of the chart, with the operator's default.
func TestEveryFlagIsAValue(t *testing.T) {
	c := newChart(t)
	v, _ := lookup(chartValues(t, c), "operator.flags")
	values, _ := v.(map[string]any)
	fs, _ := operatorFlags()
	fs.VisitAll(func(f *flag.Flag) {
		if slices.Contains(flagsSetByChart, f.Name) {
			return
		}
		v, ok := values[f.Name]
		if !ok {
			t.Errorf("flag --%s (default %q) is missing from operator.flags in %s/values.yaml", f.Name, f.DefValue, c.dir)
			return
		}
		got := fmt.Sprint(v)
		if f.DefValue == "" && got == "true" && strings.HasPrefix(f.Name, "enable-") {
			return // BoolFunc flags print no default; theirs is true
		}
		if got != f.DefValue {
			t.Errorf("operator.flags.%s is %q in values.yaml, but the operator's default is %q: update the chart", f.Name, got, f.DefValue)
		}
	})
	for name := range values {
		if fs.Lookup(name) == nil {
			t.Errorf("operator.flags.%s is not a flag of eni-operator", name)
		}
	}
}

func checkSecure(t *testing.T, pod map[string]any) {
	t.Helper()
	if v, _, _ := unstructured.NestedBool(pod, "securityContext", "runAsNonRoot"); !v {
		t.Error("operator pod may run as root")
	}
	c := pod["containers"].([]any)[0].(map[string]any)
	if v, _, _ := unstructured.NestedBool(c, "securityContext", "readOnlyRootFilesystem"); !v {
		t.Error("operator root filesystem is writable")
	}
	if v, _, _ := unstructured.NestedBool(c, "securityContext", "allowPrivilegeEscalation"); v {
		t.Error("operator allows privilege escalation")
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		if p, _, _ := unstructured.NestedString(c, probe, "httpGet", "path"); p != path {
			t.Errorf("%s path %q, want %s", probe, p, path)
		}
	}
}

func agentContainer(t *testing.T, ds *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "containers")
	return cs[0].(map[string]any)
}

func hasHostPath(ds *unstructured.Unstructured, path string) bool {
	vols, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "volumes")
	for _, v := range vols {
		if p, _, _ := unstructured.NestedString(v.(map[string]any), "hostPath", "path"); p == path {
			return true
		}
	}
	return false
}

// The agent, when enabled, is minimal: only on labelled nodes, only the
// readiness taint tolerated (the agent is what it waits for), NET_ADMIN and nothing else, not privileged, unauthenticated
// metrics on the node's loopback, probes on the node's IP, no sysfs or
// SR-IOV mounts; DPDK adds privileged and the mounts.
func TestAgentValues(t *testing.T) {
	c := newChart(t)
	objs := c.renderRelease(t, "rel", "agent.enabled=true")
	ds := find(t, objs, "DaemonSet", "rel-eni-operator-agent")
	pod, _, _ := unstructured.NestedMap(ds.Object, "spec", "template", "spec")
	if sel := fmt.Sprint(pod["nodeSelector"]); sel != "map[eni-operator.io/agent:true kubernetes.io/os:linux]" {
		t.Errorf("agent nodeSelector %s; want the eni-operator.io/agent=true label", sel)
	}
	if tol := fmt.Sprint(pod["tolerations"]); tol != "[map[effect:NoSchedule key:eni-operator.io/interfaces-not-ready operator:Exists]]" {
		t.Errorf("agent tolerations %v; want the readiness taint's only", tol)
	}
	if hn, _ := pod["hostNetwork"].(bool); !hn {
		t.Error("the agent must run in the host network namespace")
	}
	ag := agentContainer(t, ds)
	sc, _, _ := unstructured.NestedMap(ag, "securityContext")
	if p, _ := sc["privileged"].(bool); p {
		t.Error("the agent is privileged without DPDK")
	}
	if caps := fmt.Sprint(sc["capabilities"]); caps != "map[add:[NET_ADMIN] drop:[ALL]]" {
		t.Errorf("agent capabilities %s; want NET_ADMIN only", caps)
	}
	if e, _ := sc["allowPrivilegeEscalation"].(bool); e || sc["allowPrivilegeEscalation"] == nil {
		t.Error("the agent must not allow privilege escalation")
	}
	if ro, _ := sc["readOnlyRootFilesystem"].(bool); !ro {
		t.Error("the agent's root filesystem is writable")
	}
	if hasHostPath(ds, "/sys") || hasHostPath(ds, "/etc/pcidp") || !hasHostPath(ds, "/var/lib/eni-agent") {
		t.Errorf("agent volumes %v; want the state directory only", pod["volumes"])
	}
	args := containerArgs(t, ds)
	checkAgentArgs(t, c, slices.Clone(args))
	for _, want := range []string{"--node-name=$(NODE_NAME)", "--state-file=/var/lib/eni-agent/state.json",
		"--metrics-bind-address=127.0.0.1:9810", "--health-probe-bind-address=127.0.0.1:9811"} {
		if !slices.Contains(args, want) {
			t.Errorf("agent args %q lack %s", args, want)
		}
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--sriov-") || strings.HasPrefix(a, "--sysfs-root") {
			t.Errorf("agent arg %s without DPDK", a)
		}
	}
	if ports := fmt.Sprint(ag["ports"]); strings.Contains(ports, "9810") || strings.Contains(ports, "9811") {
		t.Errorf("loopback metrics or health published as a port: %s", ports)
	}
	// Health on the node's loopback: the probes run the agent's own
	// --probe in the container (kubelet's httpGet would go to the node IP).
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		cmd, _, _ := unstructured.NestedStringSlice(ag, probe, "exec", "command")
		if want := []string{"/eni-agent", "--probe=http://127.0.0.1:9811" + path}; !slices.Equal(cmd, want) {
			t.Errorf("%s runs %q, want %q", probe, cmd, want)
		}
	}
	dsSA, _, _ := unstructured.NestedString(pod, "serviceAccountName")
	depSA, _, _ := unstructured.NestedString(find(t, objs, "Deployment", "rel-eni-operator").Object, "spec", "template", "spec", "serviceAccountName")
	if dsSA == depSA || dsSA == "" {
		t.Errorf("agent ServiceAccount %q must differ from the operator's %q", dsSA, depSA)
	}
	agentRole := find(t, objs, "ClusterRole", "rel-eni-operator-agent")
	if !sameJSON(t, agentRole.Object["rules"], rulesOf(t, filepath.Join(c.dir, "files", "agent-role.yaml"))) {
		t.Errorf("agent ClusterRole differs from the generated agent role")
	}
	vap := find(t, objs, "ValidatingAdmissionPolicy", "rel-eni-operator-agent-own-node")
	if cond := fmt.Sprint(vap.Object["spec"].(map[string]any)["matchConditions"]); !strings.Contains(cond, "system:serviceaccount:"+namespace+":"+dsSA) {
		t.Errorf("admission policy does not select the agent's ServiceAccount: %s", cond)
	}
	find(t, objs, "ValidatingAdmissionPolicyBinding", "rel-eni-operator-agent-own-node")
	apply(t, objs)

	objs = c.renderRelease(t, "rel", "agent.enabled=true", "agent.dpdk.enabled=true", "agent.metricsBindHost=0")
	ds = find(t, objs, "DaemonSet", "rel-eni-operator-agent")
	ag = agentContainer(t, ds)
	if p, _, _ := unstructured.NestedBool(ag, "securityContext", "privileged"); !p {
		t.Error("DPDK binding writes sysfs: the agent must be privileged with agent.dpdk.enabled")
	}
	args = containerArgs(t, ds)
	checkAgentArgs(t, c, slices.Clone(args))
	for _, want := range []string{"--sysfs-root=/sys", "--sriov-config=/etc/pcidp/config.json", "--sriov-reload=touch:/var/run/eni-agent/sriov-reload", "--metrics-bind-address=0"} {
		if !slices.Contains(args, want) {
			t.Errorf("DPDK agent args %q lack %s", args, want)
		}
	}
	for _, p := range []string{"/sys", "/etc/pcidp", "/var/run/eni-agent", "/var/lib/eni-agent"} {
		if !hasHostPath(ds, p) {
			t.Errorf("DPDK agent lacks the hostPath %s", p)
		}
	}
	apply(t, objs)
}

// agent.sriov.enabled (kernel-driver SR-IOV, no DPDK) publishes to the
// SR-IOV device plugin with its config and reload directories mounted,
// and stays unprivileged with the host's sysfs unmounted.
func TestAgentSRIOVWithoutDPDK(t *testing.T) {
	c := newChart(t)
	ds := find(t, c.renderRelease(t, "rel", "agent.enabled=true", "agent.sriov.enabled=true"), "DaemonSet", "rel-eni-operator-agent")
	sc, _, _ := unstructured.NestedMap(agentContainer(t, ds), "securityContext")
	if p, _ := sc["privileged"].(bool); p {
		t.Error("the agent is privileged for SR-IOV without DPDK")
	}
	if hasHostPath(ds, "/sys") || !hasHostPath(ds, "/etc/pcidp") || !hasHostPath(ds, "/var/run/eni-agent") {
		t.Errorf("agent volumes: want the device plugin's config and reload directories, not sysfs")
	}
	args := containerArgs(t, ds)
	checkAgentArgs(t, c, slices.Clone(args))
	for _, want := range []string{"--sriov-config=/etc/pcidp/config.json", "--sriov-reload=touch:/var/run/eni-agent/sriov-reload"} {
		if !slices.Contains(args, want) {
			t.Errorf("agent args %q lack %s", args, want)
		}
	}
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--sysfs-root") }) {
		t.Errorf("agent args %q set --sysfs-root without DPDK", args)
	}
}
