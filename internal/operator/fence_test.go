package operator

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// leaseWrite is a Lease write the fence sees: the holder it names, sent
// how long ago, failed or not.
type leaseWrite struct {
	holder string
	ago    time.Duration
	failed bool
}

func TestLeaseFence(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name string
		// writes are the Lease writes seen: holder, sent how long ago, failed.
		writes []leaseWrite
		open   bool
	}{
		{name: "never held", open: false},
		{name: "renewed just now", writes: []leaseWrite{{"me", 0, false}}, open: true},
		{name: "last renewal older than the renew deadline", writes: []leaseWrite{{"me", 4 * time.Second, false}}, open: false},
		{name: "a failed renewal does not count", writes: []leaseWrite{{"me", 4 * time.Second, false}, {"me", 0, true}}, open: false},
		{name: "released", writes: []leaseWrite{{"me", time.Second, false}, {"", 0, false}}, open: false},
		{name: "an older renewal answered late does not move it back", writes: []leaseWrite{{"me", 0, false}, {"me", 5 * time.Second, false}}, open: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &leaseFence{validFor: 3 * time.Second, clock: clocktesting.NewFakePassiveClock(now)}
			for _, w := range tc.writes {
				var err error
				if w.failed {
					err = errors.New("conflict")
				}
				f.observe(w.holder, "me", now.Add(-w.ago), err)
			}
			if got := f.check() == nil; got != tc.open {
				t.Errorf("fence open = %v, want %v", got, tc.open)
			}
		})
	}
}

// A closed fence stops writes before they leave the process and lets
// reads and the metrics endpoint's reviews through; an open one lets all
// through.
func TestFencedTransport(t *testing.T) {
	var reached []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = append(reached, r.Method+" "+r.URL.Path)
	}))
	defer srv.Close()
	clk := clocktesting.NewFakePassiveClock(time.Now())
	f := &leaseFence{validFor: 3 * time.Second, clock: clk}
	c := &http.Client{Transport: fencedTransport{next: http.DefaultTransport, fence: f}}
	do := func(method, path string) error {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader("{}"))
		resp, err := c.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	for _, r := range []struct {
		method, path string
		refused      bool
	}{
		{http.MethodGet, "/api/v1/pods", false},
		{http.MethodPatch, "/api/v1/namespaces/a/pods/p", true},
		{http.MethodPost, "/api/v1/namespaces/a/events", true},
		{http.MethodDelete, "/api/v1/namespaces/a/configmaps/c", true},
		{http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews", false},
		{http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", false},
	} {
		err := do(r.method, r.path)
		if refused := errors.Is(err, errLeaseNotHeld); refused != r.refused {
			t.Errorf("closed fence: %s %s refused = %v (%v), want %v", r.method, r.path, refused, err, r.refused)
		}
	}
	if len(reached) != 3 {
		t.Errorf("reached the server with the fence closed: %v, want the GET and the two reviews", reached)
	}
	f.observe("me", "me", clk.Now(), nil)
	if err := do(http.MethodPatch, "/api/v1/namespaces/a/pods/p"); err != nil {
		t.Errorf("open fence refused a write: %v", err)
	}
	// No renewal for the renew deadline (a paused replica): closed again.
	clk.SetTime(clk.Now().Add(3 * time.Second))
	if err := do(http.MethodPatch, "/api/v1/namespaces/a/pods/p"); !errors.Is(err, errLeaseNotHeld) {
		t.Errorf("a fence not renewed for its deadline let a write through: %v", err)
	}
}
