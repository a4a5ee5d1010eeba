package agent

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// Agents of many nodes report into their ENINodes while the operator
// applies each node's attachments: every write succeeds the first time
// (no resourceVersion, no conflict, no retry loop), each report is the
// agent's last list exactly (entries left out are pruned), and the
// operator's spec is intact.
func TestConcurrentWritesNeverConflict(t *testing.T) {
	ctx := context.Background()
	cfg := rest.CopyConfig(shared.Env(t).Config)
	cfg.QPS, cfg.Burst = 1000, 1000 // the writes race; the client's rate limit must not serialize them
	k8s, err := client.New(cfg, client.Options{Scheme: testenv.Scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	const nodes, rounds = 10, 3
	node := func(n int) string { return fmt.Sprintf("concurrent-writes-%02d", n) }
	eni := func(n, e int) string { return fmt.Sprintf("eni-%02d%d", n, e) }
	// The operator's part: every ENI of every round attached.
	applySpec := func(n int) error {
		var items []any
		for e := range rounds {
			a := v1alpha1.ENIAttachment{NodeENI: "multus", NodeID: node(n), InstanceID: "i-0123456789abcdef0", ENIID: eni(n, e),
				MACAddress: fmt.Sprintf("02:00:00:00:%02x:%02x", n, e), DeviceIndex: int32(e + 1), Status: v1alpha1.AttachmentAttached, LastUpdated: metav1.Now()}
			m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(&a)
			if err != nil {
				return err
			}
			items = append(items, m)
		}
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": "ENINode",
			"metadata": map[string]any{"name": node(n)}, "spec": map[string]any{"attachments": items}}}
		return k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(operatorManager("multus")), client.ForceOwnership)
	}
	for n := range nodes {
		if err := applySpec(n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(ctx, &v1alpha1.ENINode{ObjectMeta: metav1.ObjectMeta{Name: node(n)}}) })
	}

	var wg sync.WaitGroup
	errs := make(chan error, 2*nodes*rounds)
	for n := range nodes {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for r := range rounds {
				// Each round replaces the report: round r has r+1 ENIs.
				var es []v1alpha1.InterfaceStatus
				for e := 0; e <= r; e++ {
					es = append(es, v1alpha1.InterfaceStatus{ENIID: eni(n, e), MTU: int32(9000 + r),
						State: v1alpha1.InterfaceConfigured, LastUpdated: metav1.Now()})
				}
				if r == rounds-1 && n%2 == 0 {
					es = es[:1] // even nodes drop ENIs in the last round
				}
				errs <- ApplyInterfaces(ctx, k8s, node(n), es)
			}
		}()
		go func() {
			defer wg.Done()
			for range rounds {
				errs <- applySpec(n)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a write failed: %v", err)
		}
	}
	for n := range nodes {
		got := &v1alpha1.ENINode{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: node(n)}, got); err != nil {
			t.Fatal(err)
		}
		want := rounds
		if n%2 == 0 {
			want = 1
		}
		if len(got.Status.Interfaces) != want {
			t.Errorf("%s has %d entries; want %d: %+v", node(n), len(got.Status.Interfaces), want, got.Status.Interfaces)
		}
		for _, s := range got.Status.Interfaces {
			if s.MTU != 9000+rounds-1 {
				t.Errorf("%s: entry %s from an old round: %+v", node(n), s.ENIID, s)
			}
		}
		if len(got.Spec.Attachments) != rounds {
			t.Errorf("%s: the operator's attachments: %+v", node(n), got.Spec.Attachments)
		}
	}
}

// A node without an ENINode has nothing to report into: not an error.
func TestApplyInterfacesWithoutENINode(t *testing.T) {
	k8s := testenv.Client(t, shared.Env(t).Config)
	es := []v1alpha1.InterfaceStatus{{ENIID: "eni-1", State: v1alpha1.InterfacePending, LastUpdated: metav1.Now()}}
	if err := ApplyInterfaces(context.Background(), k8s, "no-eninode", es); err != nil {
		t.Fatalf("reporting without an ENINode: %v", err)
	}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: "no-eninode"}, &v1alpha1.ENINode{}); err == nil {
		t.Fatal("the report created the ENINode; only the operator creates them")
	}
}
