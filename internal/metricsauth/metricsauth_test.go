package metricsauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// apiServer answers reviews as a table says: tokens to users, users to
// the paths they may get. It counts the reviews and can hold them.
type apiServer struct {
	users                       map[string]string   // token → username
	allowed                     map[string][]string // username → paths
	fail                        bool
	hold                        chan struct{} // when set, reviews wait on it
	tokenReviews, accessReviews atomic.Int32
}

func (a *apiServer) wait() {
	if a.hold != nil {
		<-a.hold
	}
}

type tokenReviews struct{ *apiServer }

func (f tokenReviews) Create(_ context.Context, tr *authnv1.TokenReview, _ metav1.CreateOptions) (*authnv1.TokenReview, error) {
	f.tokenReviews.Add(1)
	f.wait()
	if f.fail {
		return nil, errors.New("connection refused")
	}
	out := tr.DeepCopy()
	if name, ok := f.users[tr.Spec.Token]; ok {
		out.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: name, Groups: []string{"system:serviceaccounts"}}}
	}
	return out, nil
}

type accessReviews struct{ *apiServer }

func (f accessReviews) Create(_ context.Context, sar *authzv1.SubjectAccessReview, _ metav1.CreateOptions) (*authzv1.SubjectAccessReview, error) {
	f.accessReviews.Add(1)
	f.wait()
	out := sar.DeepCopy()
	na := sar.Spec.NonResourceAttributes
	for _, p := range f.allowed[sar.Spec.User] {
		out.Status.Allowed = out.Status.Allowed || (na != nil && na.Path == p && na.Verb == "get")
	}
	return out, nil
}

func serve(t *testing.T, api *apiServer) func(header string) (int, string) {
	t.Helper()
	r := NewReviewer(tokenReviews{api}, accessReviews{api})
	h, err := r.Filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	if err != nil {
		t.Fatal(err)
	}
	return func(header string) (int, string) {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
}

func TestFilter(t *testing.T) {
	users := map[string]string{"scraper-token": "scraper", "stranger-token": "stranger"}
	allowed := map[string][]string{"scraper": {"/metrics"}, "stranger": {"/healthz"}}
	tests := []struct {
		name                   string
		header                 string
		fail                   bool
		wantCode               int
		wantBody               string
		wantTokenR, wantAccess int32
	}{
		{"no header", "", false, http.StatusUnauthorized, "Bearer", 0, 0},
		{"not a bearer token", "Basic c2NyYXBlcjpw", false, http.StatusUnauthorized, "Bearer", 0, 0},
		{"empty bearer", "Bearer ", false, http.StatusUnauthorized, "Bearer", 0, 0},
		{"a token the API server does not know", "Bearer forged", false, http.StatusUnauthorized, "Unauthorized", 1, 0},
		{"a user RBAC does not allow /metrics", "Bearer stranger-token", false, http.StatusForbidden, "user stranger may not get /metrics", 1, 1},
		{"a metrics reader", "Bearer scraper-token", false, http.StatusOK, "metrics", 1, 1},
		{"scheme in lower case", "bearer scraper-token", false, http.StatusOK, "metrics", 1, 1},
		{"the API server does not answer", "Bearer scraper-token", true, http.StatusInternalServerError, "TokenReview", 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := &apiServer{users: users, allowed: allowed, fail: tc.fail}
			get := serve(t, api)
			code, body := get(tc.header)
			if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Errorf("got %d %q; want %d with %q", code, body, tc.wantCode, tc.wantBody)
			}
			if api.tokenReviews.Load() != tc.wantTokenR || api.accessReviews.Load() != tc.wantAccess {
				t.Errorf("reviews: %d token, %d access; want %d, %d", api.tokenReviews.Load(), api.accessReviews.Load(), tc.wantTokenR, tc.wantAccess)
			}
		})
	}
}

// Prometheus scrapes every few seconds: the answers are cached, so a
// scraper (allowed), a stranger (denied) and a forged token cost one
// review each, not one a scrape.
func TestAnswersAreCached(t *testing.T) {
	api := &apiServer{users: map[string]string{"s": "scraper", "x": "stranger"}, allowed: map[string][]string{"scraper": {"/metrics"}}}
	get := serve(t, api)
	for range 10 {
		for _, h := range []string{"Bearer s", "Bearer x", "Bearer forged"} {
			get(h)
		}
	}
	if got := api.tokenReviews.Load(); got != 3 {
		t.Errorf("%d TokenReviews for 3 tokens scraped 10 times; want 3", got)
	}
	if got := api.accessReviews.Load(); got != 2 {
		t.Errorf("%d SubjectAccessReviews for 2 users scraped 10 times; want 2", got)
	}
}

// Whoever reaches the port can send tokens, and each new one costs the
// API server a review: beyond reviewsInFlight at once, a request is
// refused with 429 without a review.
func TestReviewsInFlightAreBounded(t *testing.T) {
	api := &apiServer{hold: make(chan struct{})}
	get := serve(t, api)
	var wg sync.WaitGroup
	for i := range reviewsInFlight {
		wg.Go(func() { get("Bearer held-" + string(rune('a'+i))) })
	}
	for api.tokenReviews.Load() < reviewsInFlight {
		time.Sleep(time.Millisecond) // the held requests reach the API server
	}
	if code, _ := get("Bearer one-more"); code != http.StatusTooManyRequests {
		t.Errorf("a request beyond %d reviews in flight got %d; want 429", reviewsInFlight, code)
	}
	if got := api.tokenReviews.Load(); got != reviewsInFlight {
		t.Errorf("%d TokenReviews sent; want %d", got, reviewsInFlight)
	}
	close(api.hold)
	wg.Wait()
	if code, _ := get("Bearer after"); code != http.StatusUnauthorized {
		t.Errorf("after the held reviews: %d; want 401 (a free slot, an unknown token)", code)
	}
}
