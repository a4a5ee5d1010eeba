// Package metricsauth guards the operator's /metrics with the API server's
// own answers: a TokenReview says who the bearer of a token is, a
// SubjectAccessReview whether they may get the path (RBAC
// nonResourceURLs), as kube-rbac-proxy and controller-runtime's metrics
// filter do.
//
// It replaces controller-runtime's filters.WithAuthenticationAndAuthorization,
// which reaches the whole of k8s.io/apiserver (CEL, gRPC, OpenTelemetry,
// text/template). text/template looks methods up by name at run time, so
// the linker must keep every exported method of every type, which keeps
// all of the EC2 SDK's ~700 operations: the binary was 2.2 times as large
// (122 MB against 55 MB), and its touched pages were most of the
// operator's RSS.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The caches' lifetimes are the API server's delegating defaults: a
// token's identity for a minute, an allow for five, a deny for thirty
// seconds so a new RoleBinding takes effect soon.
const (
	identityTTL = time.Minute
	allowTTL    = 5 * time.Minute
	denyTTL     = 30 * time.Second
	// cacheSize bounds each cache: scrapers are a handful of identities;
	// random tokens from a caller probing the port must not grow memory.
	cacheSize = 256
	// reviewsInFlight bounds the reviews sent at once: whoever can reach
	// the port can send tokens, and each unknown one costs the API server
	// a TokenReview. Beyond it a request is answered 429 at once.
	reviewsInFlight = 4
	reviewTimeout   = 10 * time.Second
)

// Reviewer answers whether a request may read the metrics, from the API
// server's reviews, cached.
type Reviewer struct {
	tokenReviews          authnclient.TokenReviewInterface
	accessReviews         authzclient.SubjectAccessReviewInterface
	identities, decisions *cache.LRUExpireCache
	// slots holds one token per review in flight.
	slots chan struct{}
}

// Provider is a metricsserver.Options.FilterProvider: it builds a
// Reviewer from the manager's REST config and HTTP client.
func Provider(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	authn, err := authnclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	authz, err := authzclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	return NewReviewer(authn.TokenReviews(), authz.SubjectAccessReviews()).Filter, nil
}

// NewReviewer returns a Reviewer with empty caches.
func NewReviewer(tr authnclient.TokenReviewInterface, sar authzclient.SubjectAccessReviewInterface) *Reviewer {
	return &Reviewer{tokenReviews: tr, accessReviews: sar,
		identities: cache.NewLRUExpireCache(cacheSize), decisions: cache.NewLRUExpireCache(cacheSize),
		slots: make(chan struct{}, reviewsInFlight)}
}

// Filter wraps handler: 401 without a token the API server
// authenticates, 403 for a user RBAC does not allow to get the path, 429
// while too many reviews are in flight, 500 when the API server cannot
// answer.
func (r *Reviewer) Filter(log logr.Logger, handler http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := bearer(req)
		if !ok {
			http.Error(w, "Unauthorized: send a ServiceAccount token as Authorization: Bearer", http.StatusUnauthorized)
			return
		}
		code, msg := r.allowed(req.Context(), token, strings.ToLower(req.Method), req.URL.Path, log)
		if code != http.StatusOK {
			http.Error(w, msg, code)
			return
		}
		handler.ServeHTTP(w, req)
	}), nil
}

// allowed is the status a request with token gets for verb on path, and
// the message that explains a refusal.
func (r *Reviewer) allowed(ctx context.Context, token, verb, path string, log logr.Logger) (int, string) {
	user, err := r.identity(ctx, token)
	switch {
	case errors.Is(err, errBusy):
		return http.StatusTooManyRequests, "Too many requests: retry"
	case err != nil:
		log.Error(err, "Reviewing a metrics request's token failed")
		return http.StatusInternalServerError, "Authentication failed: the API server did not answer the TokenReview"
	case user == nil:
		log.V(4).Info("Metrics request with a token the API server does not authenticate")
		return http.StatusUnauthorized, "Unauthorized"
	}
	ok, err := r.decision(ctx, *user, verb, path)
	switch {
	case errors.Is(err, errBusy):
		return http.StatusTooManyRequests, "Too many requests: retry"
	case err != nil:
		log.Error(err, "Authorizing a metrics request failed", "user", user.Username)
		return http.StatusInternalServerError, fmt.Sprintf("Authorization for user %s failed", user.Username)
	case !ok:
		log.V(4).Info("Metrics request denied", "user", user.Username, "verb", verb, "path", path)
		return http.StatusForbidden, fmt.Sprintf("Forbidden: user %s may not %s %s (RBAC nonResourceURLs)", user.Username, verb, path)
	}
	return http.StatusOK, ""
}

// errBusy says the review was not sent: reviewsInFlight are in flight.
var errBusy = errors.New("too many reviews in flight")

// identity is the user the API server says token belongs to, nil for a
// token it does not authenticate. Tokens are cached by their hash, never
// kept themselves.
func (r *Reviewer) identity(ctx context.Context, token string) (*authnv1.UserInfo, error) {
	key := sha256.Sum256([]byte(token))
	if v, ok := r.identities.Get(key); ok {
		return v.(*authnv1.UserInfo), nil
	}
	if !r.acquire() {
		return nil, errBusy
	}
	defer r.release()
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	review, err := r.tokenReviews.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	var user *authnv1.UserInfo
	if review.Status.Authenticated {
		user = &review.Status.User
	}
	r.identities.Add(key, user, identityTTL)
	return user, nil
}

// decision is whether RBAC allows user verb on path.
func (r *Reviewer) decision(ctx context.Context, user authnv1.UserInfo, verb, path string) (bool, error) {
	groups := slices.Clone(user.Groups)
	slices.Sort(groups)
	key := strings.Join(append([]string{user.UID, user.Username, verb, path}, groups...), "\x00")
	if v, ok := r.decisions.Get(key); ok {
		return v.(bool), nil
	}
	if !r.acquire() {
		return false, errBusy
	}
	defer r.release()
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	extra := make(map[string]authzv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	review, err := r.accessReviews.Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: path, Verb: verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	ok := review.Status.Allowed && !review.Status.Denied
	ttl := denyTTL
	if ok {
		ttl = allowTTL
	}
	r.decisions.Add(key, ok, ttl)
	return ok, nil
}

func (r *Reviewer) acquire() bool {
	select {
	case r.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (r *Reviewer) release() { <-r.slots }

// bearer is the request's bearer token.
func bearer(req *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(req.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "bearer") && token != ""
}
