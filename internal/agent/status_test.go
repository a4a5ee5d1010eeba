package agent

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/testenv"
)

// Agents of many nodes write into one NodeENI at the same moment, while
// the operator patches its part of the status: every write succeeds the
// first time (no resourceVersion, no conflict, no retry loop), each node
// ends with exactly its entries, and the operator's fields are intact.
func TestConcurrentNodeWritesNeverConflict(t *testing.T) {
	ctx := context.Background()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 1000 // the writes race; the client's rate limit must not serialize them
	k8s, err := client.New(cfg, client.Options{Scheme: testenv.Scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	name := "concurrent-writes"
	ne := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeENISpec{
		NodeSelector: map[string]string{}, SubnetID: "subnet-0123456789abcdef0", SecurityGroupIDs: []string{"sg-0123456789abcdef0"}}}
	if err := k8s.Create(ctx, ne); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, ne) })

	const nodes, rounds = 20, 3
	var wg sync.WaitGroup
	errs := make(chan error, nodes*rounds+rounds)
	for n := 0; n < nodes; n++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node := fmt.Sprintf("node-%02d", n)
			for r := 0; r < rounds; r++ {
				// Each round replaces the node's part: round r has r+1 ENIs.
				var es []v1alpha1.InterfaceStatus
				for e := 0; e <= r; e++ {
					es = append(es, v1alpha1.InterfaceStatus{NodeID: node, ENIID: fmt.Sprintf("eni-%02d%d", n, e), MTU: int32(9000 + r),
						State: v1alpha1.InterfaceConfigured, LastUpdated: metav1.Now()})
				}
				if r == rounds-1 && n%2 == 0 {
					es = es[:1] // even nodes drop ENIs in the last round
				}
				errs <- ApplyInterfaces(ctx, k8s, node, name, es)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for r := 0; r < rounds; r++ {
			cur := &v1alpha1.NodeENI{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: name}, cur); err != nil {
				errs <- err
				continue
			}
			old := cur.DeepCopy()
			cur.Status.DesiredNodes, cur.Status.ReadyNodes = nodes, int32(r)
			errs <- k8s.Status().Patch(ctx, cur, client.MergeFrom(old))
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a write failed: %v", err)
		}
	}
	got := &v1alpha1.NodeENI{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
		t.Fatal(err)
	}
	perNode := map[string]int{}
	for _, s := range got.Status.Interfaces {
		if s.MTU != 9000+rounds-1 {
			t.Errorf("entry %s/%s from an old round: %+v", s.NodeID, s.ENIID, s)
		}
		perNode[s.NodeID]++
	}
	for n := 0; n < nodes; n++ {
		want := rounds
		if n%2 == 0 {
			want = 1
		}
		if c := perNode[fmt.Sprintf("node-%02d", n)]; c != want {
			t.Errorf("node-%02d has %d entries; want %d", n, c, want)
		}
	}
	if got.Status.DesiredNodes != nodes || got.Status.ReadyNodes != rounds-1 {
		t.Errorf("the operator's fields: %+v", got.Status)
	}
}
