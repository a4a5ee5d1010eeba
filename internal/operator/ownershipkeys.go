package operator

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/eni-operator/eni-operator/internal/ownership"
)

// DefaultOwnershipKeySecret names the Secret holding the ownership key
// ring (--ownership-key-secret).
const DefaultOwnershipKeySecret = "eni-operator-ownership-keys"

// loadOwnershipKeys reads the key ring that proves which ENIs are the
// operator's, creating the Secret with one new key on a first start.
// The operator makes the key itself rather than the chart: a key rendered
// by a template would change on every `helm template` a GitOps tool runs,
// and with it every ENI would lose its proof. Replicas starting together
// may both create; the loser reads the winner's.
func loadOwnershipKeys(ctx context.Context, cfg *rest.Config, namespace, name string) (*ownership.KeyRing, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	secrets := cs.CoreV1().Secrets(namespace)
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		id, key, kerr := ownership.NewKey(time.Now())
		if kerr != nil {
			return nil, kerr
		}
		s, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
				Labels: map[string]string{"app.kubernetes.io/name": "eni-operator", "app.kubernetes.io/component": "ownership-keys"}},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{id: key},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			s, err = secrets.Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading the ownership key ring, Secret %s/%s (the operator needs get on it and create in its namespace; docs/security.md, Ownership proofs): %w", namespace, name, err)
	}
	keys, err := ownership.NewKeyRing(s.Data)
	if err != nil {
		return nil, fmt.Errorf("the ownership key ring, Secret %s/%s: %w", namespace, name, err)
	}
	return keys, nil
}
