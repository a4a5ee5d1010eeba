package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
)

// operatorServiceAccount is the ServiceAccount of config/rbac (and of the
// chart's default release), which its bindings and policies name.
const operatorServiceAccount = "eni-operator"

// operatorUser is the user name the API server gives operatorServiceAccount's
// token, and the name the admission policies' matchConditions compare.
const operatorUser = "system:serviceaccount:" + operatorNamespace + ":" + operatorServiceAccount

// asServiceAccount is admin acting as the operator's ServiceAccount, with
// the groups its token would carry: no token controller runs here.
func asServiceAccount(admin *rest.Config) *rest.Config {
	c := rest.CopyConfig(admin)
	c.Impersonate = rest.ImpersonationConfig{UserName: operatorUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace, "system:authenticated"}}
	return c
}

// startOperatorAs creates the operator's namespace (its key ring, which
// it reads at start, lives there), gives it its identity (operatorAccess)
// and starts it with that.
func startOperatorAs(ctx context.Context, o Options, admin *rest.Config, adminClient client.Client, vpc string) (*operatorRun, error) {
	if err := createNamespace(ctx, adminClient, operatorNamespace, nil); err != nil {
		return nil, err
	}
	cfg, err := operatorAccess(ctx, o, admin, adminClient)
	if err != nil {
		return nil, err
	}
	u, err := whoAmI(ctx, cfg)
	if err != nil {
		return nil, err
	}
	op, err := startOperator(ctx, o, cfg, vpc)
	if err != nil {
		return nil, err
	}
	op.identity = describeIdentity(u, o.OperatorAsAdmin)
	return op, nil
}

// operatorAccess is the config the operator runs with: unless asAdmin,
// config/rbac applied and admin acting as its ServiceAccount, returned
// once RBAC and the admission policies are in force, so the operator's
// first requests meet what a cluster would answer.
func operatorAccess(ctx context.Context, o Options, admin *rest.Config, adminClient client.Client) (*rest.Config, error) {
	if o.OperatorAsAdmin {
		o.say("the operator runs with the administrator's credentials (--operator-as-admin): no RBAC, no admission policy applies to it")
		return admin, nil
	}
	n, err := applyRBAC(ctx, adminClient, o.Root)
	if err != nil {
		return nil, err
	}
	o.say("applied %s (%d objects: the chart's RBAC and admission policies); the operator runs as %s", rel(o.Root, rbacDir(o.Root)), n, operatorUser)
	cfg := asServiceAccount(admin)
	as, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := poll(wait, o.say, func() (string, bool, error) { return inForce(wait, as) }); err != nil {
		return nil, fmt.Errorf("the operator's RBAC and admission policies: %w", err)
	}
	return cfg, nil
}

// inForce says whether as may list NodeENIs (RBAC bound) and is refused
// a dry-run NetworkAttachmentDefinition it does not own: definitions_policy
// is config/rbac's last policy and binding, and the API server's watch of
// each kind sees them in the order they were created.
func inForce(ctx context.Context, as client.Client) (string, bool, error) {
	if err := as.List(ctx, &v1alpha1.NodeENIList{}); err != nil {
		return "RBAC in force for " + operatorUser, false, err
	}
	err := as.Create(ctx, strayDefinition(), client.DryRunAll)
	if err == nil || !isPolicyRefusal(err) {
		return "the admission policies in force for " + operatorUser, false, err
	}
	return "", true, nil
}

// strayDefinition is a NetworkAttachmentDefinition no NodeENI controls,
// which definitions_policy.yaml refuses the operator.
func strayDefinition() *unstructured.Unstructured {
	u := newDefinition()
	u.SetNamespace(operatorNamespace)
	u.SetName("sandbox-policy-probe")
	return u
}

// isPolicyRefusal says whether err is a ValidatingAdmissionPolicy's
// denial (Invalid or Forbidden, naming the policy).
func isPolicyRefusal(err error) bool {
	return (apierrors.IsInvalid(err) || apierrors.IsForbidden(err)) && strings.Contains(err.Error(), "ValidatingAdmissionPolicy")
}

// whoAmI is the user the API server sees behind cfg, from a
// SelfSubjectReview (what `kubectl auth whoami` asks).
func whoAmI(ctx context.Context, cfg *rest.Config) (authenticationv1.UserInfo, error) {
	c, err := newClient(cfg)
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	r := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, r); err != nil {
		return authenticationv1.UserInfo{}, fmt.Errorf("SelfSubjectReview: %w", err)
	}
	if r.Status.UserInfo.Username == "" {
		return authenticationv1.UserInfo{}, errors.New("SelfSubjectReview: no user in the answer")
	}
	return r.Status.UserInfo, nil
}

// describeIdentity is the access summary's line on who the operator is
// to the API server (whoAmI's answer) and what limits it.
func describeIdentity(u authenticationv1.UserInfo, asAdmin bool) string {
	who := fmt.Sprintf("%s (groups %s)", u.Username, strings.Join(u.Groups, ", "))
	if asAdmin {
		return who + ": the administrator (--operator-as-admin); no RBAC rule or admission policy limits it"
	}
	return who + ": the ServiceAccount, with the chart's RBAC and admission policies (config/rbac); --operator-as-admin runs it as the administrator"
}
