package operator

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/ownership"
)

var shared testenv.Shared

func TestMain(m *testing.M) { testenv.Main(m, &shared) }

func eniNode(name string, enis ...string) v1alpha1.ENINode {
	n := v1alpha1.ENINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, id := range enis {
		n.Spec.Attachments = append(n.Spec.Attachments, v1alpha1.ENIAttachment{NodeENI: "multus", NodeID: name,
			InstanceID: "i-0123456789abcdef0", ENIID: id, SubnetID: "subnet-a", DeviceIndex: 1, Status: "attached"})
	}
	return n
}

// A missing Secret is a lost key ring only when ENINodes record ENIs.
func TestKeyLost(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []v1alpha1.ENINode
		lost  bool
		enis  int
	}{
		{"first start: no ENINodes", nil, false, 0},
		{"ENINodes without attachments", []v1alpha1.ENINode{eniNode("a"), eniNode("b")}, false, 0},
		{"one ENI recorded", []v1alpha1.ENINode{eniNode("a"), eniNode("b", "eni-1")}, true, 1},
		{"ENIs on several nodes", []v1alpha1.ENINode{eniNode("a", "eni-1", "eni-2"), eniNode("b", "eni-3")}, true, 3},
	} {
		if lost, enis := keyLost(tc.nodes); lost != tc.lost || enis != tc.enis {
			t.Errorf("%s: lost %v with %d ENIs, want %v with %d", tc.name, lost, enis, tc.lost, tc.enis)
		}
	}
}

// keysHarness loads the key ring of one namespace's Secret as a start-up
// does, with a registry and a log of its own.
type keysHarness struct {
	t         *testing.T
	c         client.Client
	namespace string
	clock     *clocktesting.FakePassiveClock
	mu        sync.Mutex
	errors    []string // error lines logged
}

func newKeysHarness(t *testing.T, namespace string) *keysHarness {
	env := shared.Env(t)
	h := &keysHarness{t: t, c: testenv.Client(t, env.Config), namespace: namespace,
		clock: clocktesting.NewFakePassiveClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))}
	testenv.CreateNamespaces(t, h.c, namespace)
	return h
}

// createENINode creates an ENINode recording enis, deleted when the test
// ends (ENINodes are cluster-scoped: every test sees them).
func (h *keysHarness) createENINode(name string, enis ...string) {
	h.t.Helper()
	n := eniNode(name, enis...)
	if err := h.c.Create(context.Background(), &n); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		if err := h.c.Delete(context.Background(), &n); err != nil && !apierrors.IsNotFound(err) {
			h.t.Error(err)
		}
	})
}

// load is one start: it loads the ring and returns it with the gauge's
// value.
func (h *keysHarness) load() (*ownership.KeyRing, float64) {
	h.t.Helper()
	replaced, err := newKeyReplacedGauge(prometheus.NewRegistry())
	if err != nil {
		h.t.Fatal(err)
	}
	log := funcr.New(func(_, args string) {
		if strings.Contains(args, `"error"=`) {
			h.mu.Lock()
			h.errors = append(h.errors, args)
			h.mu.Unlock()
		}
	}, funcr.Options{})
	keys, err := loadOwnershipKeys(context.Background(), keyLoad{cfg: shared.Env(h.t).Config, eniNodes: h.c,
		namespace: h.namespace, name: DefaultOwnershipKeySecret, log: log, replaced: replaced, clock: h.clock})
	if err != nil {
		h.t.Fatal(err)
	}
	return keys, testutil.ToFloat64(replaced)
}

func (h *keysHarness) secret() *corev1.Secret {
	h.t.Helper()
	var s corev1.Secret
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.namespace, Name: DefaultOwnershipKeySecret}, &s); err != nil {
		h.t.Fatal(err)
	}
	return &s
}

func (h *keysHarness) loggedErrors() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.errors...)
}

// A first start (no ENINodes) creates the Secret quietly: the gauge is 0
// and nothing is logged at error level.
func TestFirstStartCreatesTheKeyQuietly(t *testing.T) {
	h := newKeysHarness(t, "keys-first-start")
	h.createENINode("node-without-enis")
	keys, replaced := h.load()
	if replaced != 0 || len(h.loggedErrors()) != 0 {
		t.Errorf("first start: gauge %v, errors logged %q; want 0 and none", replaced, h.loggedErrors())
	}
	if ids := keys.IDs(); len(ids) != 1 || h.secret().Data[ids[0]] == nil {
		t.Errorf("the ring %v is not the one key of the Secret created", ids)
	} else if ids[0] != "k20260304t050607" {
		t.Errorf("the new key is named %s, want k20260304t050607 (when the clock says it was made)", ids[0])
	}
	if _, replaced := h.load(); replaced != 0 {
		t.Errorf("a restart with the Secret: gauge %v, want 0", replaced)
	}
}

// The Secret missing while an ENINode records an ENI: a new key is still
// created (new ENIs can be made), the gauge is 1 and one error line says
// what happened and where the recovery is.
func TestLostKeyRingIsLoud(t *testing.T) {
	h := newKeysHarness(t, "keys-lost")
	h.createENINode("node-a", "eni-0123456789abcdef0")
	keys, replaced := h.load()
	if replaced != 1 {
		t.Errorf("gauge %v, want 1", replaced)
	}
	if h.secret().Data[keys.Current()] == nil {
		t.Errorf("the Secret does not hold the new key %s", keys.Current())
	}
	errs := h.loggedErrors()
	if len(errs) != 1 || !strings.Contains(errs[0], "ownership key ring lost") ||
		!strings.Contains(errs[0], "docs/operations.md#ownership-keys") || !strings.Contains(errs[0], `"recordedENIs"=1`) ||
		!strings.Contains(errs[0], keys.Current()) {
		t.Errorf("error lines %q, want one naming the loss, the new key, the recorded ENIs and the runbook", errs)
	}
}

// docs/operations.md, Ownership keys, step by step: back the Secret up,
// lose it, let the operator start (a new key), restore the backup's keys
// alongside the new one and restart. The ring then verifies the ENIs
// signed with the old key and signs with the new one, whose ID sorts
// last; the gauge is back to 0.
func TestBackupAndRestoreAsDocumented(t *testing.T) {
	h := newKeysHarness(t, "keys-restore")
	h.createENINode("node-b", "eni-0123456789abcdef1")
	ctx := context.Background()
	// A ring from an earlier start, and an ENI proven with it.
	oldKey := map[string][]byte{"k20250101t000000": []byte(strings.Repeat("old key/", 4))}
	old, err := ownership.NewKeyRing(oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.namespace, Name: DefaultOwnershipKeySecret},
		Data: oldKey}); err != nil {
		t.Fatal(err)
	}
	claim := ownership.Claim{ENI: "eni-0123456789abcdef1", Cluster: "c", NodeENI: "multus", Node: "node-b"}
	proof := old.Sign(claim)

	// 1. Back up: kubectl get secret ... -o yaml > backup.
	backup := h.secret()
	// 2. The Secret is lost.
	if err := h.c.Delete(ctx, backup); err != nil {
		t.Fatal(err)
	}
	// 3. The operator starts: a new key, and the loss reported.
	fresh, replaced := h.load()
	if replaced != 1 {
		t.Fatalf("after the loss: gauge %v, want 1", replaced)
	}
	if _, err := fresh.Verify(claim, proof); err == nil {
		t.Fatal("the new ring verifies a proof of the lost key")
	}
	// 4. Restore the backup's keys alongside the new one (a merge patch
	// of data, as kubectl patch --type=merge sends).
	data, err := json.Marshal(map[string]any{"data": backup.Data})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.c.Patch(ctx, h.secret(), client.RawPatch(types.MergePatchType, data)); err != nil {
		t.Fatal(err)
	}
	// 5. Restart.
	keys, replaced := h.load()
	if replaced != 0 {
		t.Errorf("after the restore: gauge %v, want 0", replaced)
	}
	if got, err := keys.Verify(claim, proof); err != nil || got != "k20250101t000000" {
		t.Errorf("the restored ring verifies the old proof: key %q, %v; want k20250101t000000", got, err)
	}
	if ids := keys.IDs(); len(ids) != 2 || keys.Current() != fresh.Current() || ids[1] != fresh.Current() {
		t.Errorf("the restored ring %v signs with %s, want both keys and the new one %s (it sorts last)", ids, keys.Current(), fresh.Current())
	}
}
