package operator

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/ownership"
)

// DefaultOwnershipKeySecret names the Secret holding the ownership key
// ring (--ownership-key-secret).
const DefaultOwnershipKeySecret = "eni-operator-ownership-keys"

// keyLoad is what loading the ownership key ring reads and reports to.
type keyLoad struct {
	cfg             *rest.Config
	eniNodes        client.Reader // lists ENINodes: what the operator recorded
	namespace, name string        // the Secret
	log             logr.Logger
	replaced        prometheus.Gauge   // newKeyReplacedGauge
	clock           clock.PassiveClock // names a new key by when it was made
}

// newKeyReplacedGauge registers eni_operator_ownership_key_replaced.
func newKeyReplacedGauge(reg prometheus.Registerer) (prometheus.Gauge, error) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "eni_operator_ownership_key_replaced",
		Help: "1 when this process created a new ownership key while ENINodes recorded ENIs: the key ring Secret was lost (docs/operations.md#ownership-keys); else 0.",
	})
	return g, reg.Register(g)
}

// startOwnershipKeys loads the key ring at start-up, with the ENINodes
// read through mgr's uncached reader (its cache is not started yet).
func startOwnershipKeys(ctx context.Context, cfg *rest.Config, mgr manager.Manager, c Config, log logr.Logger) (*ownership.KeyRing, error) {
	replaced, err := newKeyReplacedGauge(c.Registerer)
	if err != nil {
		return nil, err
	}
	return loadOwnershipKeys(ctx, keyLoad{cfg: cfg, eniNodes: mgr.GetAPIReader(), namespace: c.Tagger.Namespace,
		name: c.OwnershipKeySecret, log: log, replaced: replaced, clock: clock.RealClock{}})
}

// keyLost reports whether a start-up that found no key Secret lost the
// key ring rather than starting first: ENINodes record ENIs, whose proofs
// name a key now unknown. It also counts those ENIs.
func keyLost(nodes []v1alpha1.ENINode) (lost bool, enis int) {
	for _, n := range nodes {
		enis += len(n.Spec.Attachments)
	}
	return enis > 0, enis
}

// loadOwnershipKeys reads the key ring that proves which ENIs are the
// operator's, creating the Secret with one new key on a first start.
// The operator makes the key itself rather than the chart: a key rendered
// by a template would change on every `helm template` a GitOps tool runs,
// and with it every ENI would lose its proof. Replicas starting together
// may both create; the loser reads the winner's. A missing Secret while
// ENINodes record ENIs is a lost ring: still created, so new ENIs can be
// made, and reported loudly (log and gauge).
func loadOwnershipKeys(ctx context.Context, l keyLoad) (*ownership.KeyRing, error) {
	cs, err := kubernetes.NewForConfig(l.cfg)
	if err != nil {
		return nil, err
	}
	secrets := cs.CoreV1().Secrets(l.namespace)
	l.replaced.Set(0)
	s, err := secrets.Get(ctx, l.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		s, err = createOwnershipKeys(ctx, secrets, l)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the ownership key ring, Secret %s/%s (the operator needs get on it and create in its namespace; docs/security.md, Ownership proofs): %w", l.namespace, l.name, err)
	}
	keys, err := ownership.NewKeyRing(s.Data)
	if err != nil {
		return nil, fmt.Errorf("the ownership key ring, Secret %s/%s: %w", l.namespace, l.name, err)
	}
	return keys, nil
}

// createOwnershipKeys creates the missing Secret with one new key, after
// reading the ENINodes: an error there leaves the Secret missing, so the
// next start still sees the loss.
func createOwnershipKeys(ctx context.Context, secrets typedcorev1.SecretInterface, l keyLoad) (*corev1.Secret, error) {
	var nodes v1alpha1.ENINodeList
	if err := l.eniNodes.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing ENINodes to tell a first start from a lost key ring: %w", err)
	}
	lost, enis := keyLost(nodes.Items)
	id, key, err := ownership.NewKey(l.clock.Now())
	if err != nil {
		return nil, err
	}
	s, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: l.name, Namespace: l.namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "eni-operator", "app.kubernetes.io/component": "ownership-keys"}},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{id: key},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return secrets.Get(ctx, l.name, metav1.GetOptions{})
	}
	if err != nil || !lost {
		return s, err
	}
	l.replaced.Set(1)
	l.log.Error(nil, "ownership key ring lost: its Secret was missing while ENINodes record ENIs, whose ownership proofs name a key no longer known. "+
		"Created a new key so that new ENIs can be made; the NodeENI controller re-signs the ENIs the ENINodes record with it, and leaves every other ENI "+
		"of an old key untouched. Restore the Secret's keys from its backup alongside the new key, then restart the operator (docs/operations.md#ownership-keys)",
		"secret", l.namespace+"/"+l.name, "newKey", id, "recordedENIs", enis)
	return s, nil
}
