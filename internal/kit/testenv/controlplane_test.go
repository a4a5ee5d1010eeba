package testenv

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A ControlPlane's etcd and kube-apiserver are killed and started again
// on the same data and certificates: what was written before is there
// after, a client made before reaches the restarted server, and the
// audit log names the client's user.
func TestControlPlaneRestarts(t *testing.T) {
	cp := StartControlPlane(t)
	c := Client(t, cp.User("someone"))
	ctx := context.Background()
	CreateNamespaces(t, c, "before")
	cp.KillAPIServer()
	cp.KillEtcd()
	cp.StartEtcd(t)
	cp.StartAPIServer(t)
	if err := c.Get(ctx, client.ObjectKey{Name: "before"}, &corev1.Namespace{}); err != nil {
		t.Fatalf("after a restart: %v", err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "after"}}); err != nil {
		t.Fatal(err)
	}
	var creates []string
	for _, e := range cp.Audit(t) {
		if e.Verb == "create" && e.ObjectRef.Resource == "namespaces" && e.User.Username == "someone" {
			creates = append(creates, e.ObjectRef.Name)
		}
	}
	if len(creates) != 2 || creates[0] != "before" || creates[1] != "after" {
		t.Errorf("audit log: namespaces created by someone %v, want [before after]", creates)
	}
}
