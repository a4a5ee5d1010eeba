package operator

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// Leader election alone does not stop a replica that lost its Lease from
// writing: controller-runtime exits the process when it notices, but a
// replica paused past the lease duration (a GC pause, a frozen VM, a
// SIGSTOP) resumes with its workers mid-reconcile, and they write —
// EC2 calls, pod patches, the ledger's flush on the way out — before its
// elector finds the Lease taken. The fence closes that window: every
// Kubernetes write and every EC2 write is refused unless this replica's
// last successful renewal was sent less than the renew deadline ago (a
// monotonic clock, which runs on while the process is stopped). A
// standby takes over no sooner than the lease duration after it saw
// that renewal, so a write the fence lets through is sent at least
// lease duration - renew deadline before any takeover. What no
// client-side check can close is a pause between the check and the
// send.

var errLeaseNotHeld = errors.New("write refused: this replica does not hold the leader election Lease, or cannot be sure it still does (last renewal older than --leader-elect-renew-deadline)")

// leaseFence knows when this replica last renewed its Lease.
type leaseFence struct {
	validFor time.Duration
	// clock must be monotonic across a stopped process: the real clock
	// in production.
	clock   clock.PassiveClock
	mu      sync.Mutex
	renewed time.Time // when the last successful renewal was sent; zero: not held
}

// check returns nil while the Lease is surely held.
func (f *leaseFence) check() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.renewed.IsZero() || f.clock.Since(f.renewed) >= f.validFor {
		return errLeaseNotHeld
	}
	return nil
}

// observe learns from one write of the Lease: sent at sent, naming
// holder, answered with err.
func (f *leaseFence) observe(holder, self string, sent time.Time, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err != nil:
	case holder != self: // released (ReleaseOnCancel)
		f.renewed = time.Time{}
	case sent.After(f.renewed):
		f.renewed = sent
	}
}

// fencedLock is the Lease lock, telling the fence of each renewal.
type fencedLock struct {
	resourcelock.Interface
	fence *leaseFence
}

func (l fencedLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	sent := l.fence.clock.Now()
	err := l.Interface.Create(ctx, r)
	l.fence.observe(r.HolderIdentity, l.Identity(), sent, err)
	return err
}

func (l fencedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	sent := l.fence.clock.Now()
	err := l.Interface.Update(ctx, r)
	l.fence.observe(r.HolderIdentity, l.Identity(), sent, err)
	return err
}

// fencedTransport refuses the requests that change something while the
// fence is closed. Token and access reviews (the metrics endpoint's
// authentication, which every replica serves) change nothing.
type fencedTransport struct {
	next  http.RoundTripper
	fence *leaseFence
}

func (t fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch {
	case req.Method == http.MethodGet || req.Method == http.MethodHead,
		strings.HasPrefix(req.URL.Path, "/apis/authentication.k8s.io/"),
		strings.HasPrefix(req.URL.Path, "/apis/authorization.k8s.io/"):
	default:
		if err := t.fence.check(); err != nil {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, err
		}
	}
	return t.next.RoundTrip(req)
}

// fenceOptions makes the fence of a leader-elected replica: the Lease
// lock (on restCfg, unfenced, so renewals are never refused) and the
// config the manager's clients use, whose writes pass the fence. The
// lock's events ("became leader") go through the manager's recorder once
// it exists.
func fenceOptions(restCfg *rest.Config, le LeaderElection, events *lateRecorders) (*leaseFence, resourcelock.Interface, *rest.Config, error) {
	fence := &leaseFence{validFor: le.RenewDeadline, clock: clock.RealClock{}}
	lock, err := leaderelection.NewResourceLock(restCfg, events, leaderelection.Options{
		LeaderElection: true, LeaderElectionID: LeaderElectionID, LeaderElectionNamespace: le.Namespace,
		RenewDeadline: le.RenewDeadline,
	})
	if err != nil {
		return nil, nil, nil, err
	}
	fenced := rest.CopyConfig(restCfg)
	fenced.Wrap(func(rt http.RoundTripper) http.RoundTripper { return fencedTransport{next: rt, fence: fence} })
	return fence, fencedLock{Interface: lock, fence: fence}, fenced, nil
}

// lateRecorders hands the Lease lock an event recorder before the
// manager that makes recorders exists; mgr is set right after it is
// built, long before the lock records anything.
type lateRecorders struct{ mgr manager.Manager }

func (p *lateRecorders) GetEventRecorderFor(name string) record.EventRecorder {
	return lateRecorder{p: p, name: name}
}

func (p *lateRecorders) GetEventRecorder(name string) recorder.EventRecorder {
	return p.mgr.GetEventRecorder(name)
}

type lateRecorder struct {
	p    *lateRecorders
	name string
}

func (r lateRecorder) get() record.EventRecorder {
	return r.p.mgr.GetEventRecorderFor(r.name) //nolint:staticcheck // the Lease lock speaks the old events API
}

func (r lateRecorder) Event(o runtime.Object, eventtype, reason, message string) {
	r.get().Event(o, eventtype, reason, message)
}

func (r lateRecorder) Eventf(o runtime.Object, eventtype, reason, format string, args ...any) {
	r.get().Eventf(o, eventtype, reason, format, args...)
}

func (r lateRecorder) AnnotatedEventf(o runtime.Object, annotations map[string]string, eventtype, reason, format string, args ...any) { //nolint:revive // implements record.EventRecorder
	r.get().AnnotatedEventf(o, annotations, eventtype, reason, format, args...)
}
