package testenv

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Manager is a running controller-runtime manager with a metrics registry
// of its own (a fresh one per start: a restarted operator starts from
// zero, and tests read only their manager's series).
type Manager struct {
	Registry *prometheus.Registry
	cancel   context.CancelFunc
	done     chan error
	err      error
}

// StartManager builds a manager of cfg with o — the test scheme, no
// metrics or probe server and no controller-name check unless o says
// otherwise — lets setup add controllers registering their metrics with
// the manager's fresh registry, and runs it until Stop or the test's end.
func StartManager(t testing.TB, cfg *rest.Config, o ctrl.Options, setup func(ctrl.Manager, *prometheus.Registry) error) *Manager {
	t.Helper()
	if o.Scheme == nil {
		o.Scheme = Scheme(t)
	}
	if o.Metrics.BindAddress == "" {
		o.Metrics = metricsserver.Options{BindAddress: "0"}
	}
	if o.HealthProbeBindAddress == "" {
		o.HealthProbeBindAddress = "0"
	}
	if o.Controller.SkipNameValidation == nil {
		// Each test starts its own controllers under the same names.
		o.Controller.SkipNameValidation = ptr.To(true)
	}
	mgr, err := ctrl.NewManager(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	m := &Manager{Registry: prometheus.NewRegistry(), done: make(chan error, 1)}
	if err := setup(mgr, m.Registry); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() { m.done <- mgr.Start(ctx) }()
	t.Cleanup(func() { _ = m.Stop() })
	return m
}

// Stop cancels the manager's context and waits for it to return, as a
// killed process would stop (nothing is flushed), and returns what Start
// returned. Stopping again returns the same.
func (m *Manager) Stop() error {
	if m.cancel != nil {
		m.cancel()
		m.cancel = nil
		m.err = <-m.done
	}
	return m.err
}
