package sandbox

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

const (
	// demoNamespace holds the demo pods.
	demoNamespace = "demo"
	// operatorNamespace holds the operator's ledger ConfigMaps.
	operatorNamespace = "eni-operator"
)

// demoPod is a pod the sandbox applies, with the annotation it carries
// and the condition reason the tagger must reach.
type demoPod struct {
	Name, Tags, Want string
}

// demoCostCenter is the demo namespace's cost-center label, which the
// demo's tag policy puts on every ENI of the namespace.
const demoCostCenter = "4410"

// demoPolicy tags every pod ENI of a namespace labelled cost-center with
// the label's value, whatever the pods' annotations say.
func demoPolicy() *v1alpha1.ENITagPolicy {
	return &v1alpha1.ENITagPolicy{ObjectMeta: metav1.ObjectMeta{Name: "cost-allocation"}, Spec: v1alpha1.ENITagPolicySpec{
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "cost-center", Operator: metav1.LabelSelectorOpExists}}},
		Enforced:          []v1alpha1.TagRule{{Key: "CostCenter", Expression: "namespaceObject.labels['cost-center']"}},
	}}
}

// demoPods show both annotation formats, one refusal, and a pod without
// an annotation that the tag policy alone tags.
func demoPods() []demoPod {
	return []demoPod{
		{Name: "web-0", Tags: "Team=Payments,CostCenter=1234", Want: tagger.ReasonSynced},
		{Name: "api-0", Tags: `{"Team":"Platform","Service":"api","Format":"json"}`, Want: tagger.ReasonSynced},
		// An attempt to forge the NodeENI ownership tag (see
		// docs/security.md): refused before any AWS call.
		{Name: "forbidden-0", Tags: "eni-operator.io/cluster=" + ClusterName + ",Team=Ops", Want: tagger.ReasonInvalidTags},
		{Name: "batch-0", Tags: "Team=Data,Owner=alice", Want: tagger.ReasonSynced},
		{Name: "cron-0", Want: tagger.ReasonSynced},
	}
}

// readNodeENI reads a NodeENI manifest (one object).
func readNodeENI(path string) (*v1alpha1.NodeENI, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ne := &v1alpha1.NodeENI{}
	if err := yaml.UnmarshalStrict(b, ne); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if ne.Kind != "NodeENI" || ne.Name == "" {
		return nil, fmt.Errorf("%s: not a named NodeENI", path)
	}
	return ne, nil
}

// createNamespace creates a namespace with labels.
func createNamespace(ctx context.Context, k8s client.Client, ns string, labels map[string]string) error {
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}); err != nil {
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	return nil
}

// applyDemo creates the demo's namespace, the demo pods and the NodeENI. Each
// pod gets the primary IP of one of the world's branch ENIs (security
// groups for pods: one ENI per pod, the case the tagger tags) and a node
// in that ENI's zone. With no kubelet, the sandbox writes the pod status
// (Running, podIP) a kubelet and the VPC CNI would.
func applyDemo(ctx context.Context, k8s client.Client, ec2c *ec2.Client, nodes []node, ne *v1alpha1.NodeENI) error {
	if err := createNamespace(ctx, k8s, demoNamespace, map[string]string{"cost-center": demoCostCenter}); err != nil {
		return err
	}
	if err := k8s.Create(ctx, demoPolicy()); err != nil {
		return fmt.Errorf("ENITagPolicy: %w", err)
	}
	enis, err := ec2c.ListENIs(ctx, ec2.Filter{Name: "interface-type", Values: []string{"branch"}})
	if err != nil {
		return fmt.Errorf("listing the world's branch ENIs: %w", err)
	}
	slices.SortFunc(enis, func(a, b awstypes.ENI) int {
		if c := cmpStrings(a.AvailabilityZone, b.AvailabilityZone); c != 0 {
			return c
		}
		return cmpStrings(a.ID, b.ID)
	})
	pods := demoPods()
	if len(enis) < len(pods) {
		return fmt.Errorf("the world has %d branch ENIs; the demo needs %d (one per pod)", len(enis), len(pods))
	}
	used := map[string]int{}
	for i, dp := range pods {
		eni := enis[i]
		var inZone []node
		for _, n := range nodes {
			if n.Zone == eni.AvailabilityZone {
				inZone = append(inZone, n)
			}
		}
		if len(inZone) == 0 {
			return fmt.Errorf("no node in zone %s for branch ENI %s", eni.AvailabilityZone, eni.ID)
		}
		n := inZone[used[eni.AvailabilityZone]%len(inZone)]
		used[eni.AvailabilityZone]++
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: dp.Name, Namespace: demoNamespace,
				Labels: map[string]string{"app.kubernetes.io/part-of": "eni-sandbox"}},
			Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
		}
		if dp.Tags != "" {
			pod.Annotations = map[string]string{tagger.DefaultAnnotationKey: dp.Tags}
		}
		if err := k8s.Create(ctx, pod); err != nil {
			return fmt.Errorf("pod %s: %w", dp.Name, err)
		}
		// A patch, not an update: the operator may have written the pod
		// since it was created (a condition, a finalizer).
		unset := pod.DeepCopy()
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, HostIP: n.IP, PodIP: eni.PrimaryIP,
			PodIPs: []corev1.PodIP{{IP: eni.PrimaryIP}}, StartTime: &metav1.Time{Time: time.Now()}}
		if err := k8s.Status().Patch(ctx, pod, client.StrategicMergeFrom(unset)); err != nil {
			return fmt.Errorf("pod %s status: %w", dp.Name, err)
		}
	}
	ne = ne.DeepCopy()
	ne.ResourceVersion = ""
	if err := k8s.Create(ctx, ne); err != nil {
		return fmt.Errorf("NodeENI %s: %w", ne.Name, err)
	}
	return nil
}

// waitConverged waits until every demo pod has the condition reason it
// should reach and every NodeENI is Ready with all matching nodes ready.
// It reports progress through say whenever the state changes.
func waitConverged(ctx context.Context, k8s client.Client, timeout time.Duration, say func(string, ...any)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	for {
		state, done, err := convergence(ctx, k8s)
		if err == nil && state != last {
			say("waiting: %s", state)
			last = state
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("the demo did not converge within %s: %w", timeout, err)
			}
			return fmt.Errorf("the demo did not converge within %s: %s", timeout, state)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// convergence summarises how far the demo is.
func convergence(ctx context.Context, k8s client.Client) (string, bool, error) {
	want := map[string]string{}
	for _, dp := range demoPods() {
		want[dp.Name] = dp.Want
	}
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(demoNamespace)); err != nil {
		return "", false, err
	}
	podsDone := 0
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if string(c.Type) == tagger.ConditionType && c.Reason == want[p.Name] {
				podsDone++
			}
		}
	}
	var nes v1alpha1.NodeENIList
	if err := k8s.List(ctx, &nes); err != nil {
		return "", false, err
	}
	var parts []string
	nesDone := 0
	for _, ne := range nes.Items {
		ready := meta.IsStatusConditionTrue(ne.Status.Conditions, "Ready")
		if ready && ne.Status.DesiredNodes > 0 && ne.Status.ReadyNodes == ne.Status.DesiredNodes && ne.Status.ObservedGeneration == ne.Generation {
			nesDone++
		}
		parts = append(parts, fmt.Sprintf("NodeENI %s %d/%d nodes ready", ne.Name, ne.Status.ReadyNodes, ne.Status.DesiredNodes))
	}
	// Every pod the annotation does not refuse is the policy's.
	var policy v1alpha1.ENITagPolicy
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(demoPolicy()), &policy); err != nil {
		return "", false, err
	}
	policyWant := int32(0)
	for _, dp := range demoPods() {
		if dp.Want == tagger.ReasonSynced {
			policyWant++
		}
	}
	parts = append(parts, fmt.Sprintf("ENITagPolicy %s %d/%d pods tagged", policy.Name, policy.Status.TaggedPods, policyWant))
	state := fmt.Sprintf("pods tagged as expected %d/%d; %s", podsDone, len(want), strings.Join(parts, ", "))
	return state, podsDone == len(want) && len(nes.Items) > 0 && nesDone == len(nes.Items) && policy.Status.TaggedPods == policyWant, nil
}
