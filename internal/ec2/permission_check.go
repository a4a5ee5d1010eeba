package ec2

import (
	"context"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// PermissionCheck verifies with DryRun calls, once at start, that the
// credentials allow every action the enabled parts of the operator need,
// and while any is missing checks again every Retry. It reports by IAM
// action name (log line and gauge) and never stops the process: a crash
// loop would fix nothing and hide the message. It fits
// controller-runtime's manager.Runnable.
type PermissionCheck struct {
	Client *Client
	// Actions are the IAM actions to check; the union of every part's.
	Actions []string
	// Options shape the DryRun requests (WithCreateTags).
	Options []PermissionOption
	// Retry is how long to wait before checking again (default 5m).
	Retry time.Duration
	// Missing is set to 1 for each action found missing, 0 otherwise.
	Missing *prometheus.GaugeVec
}

// NewPermissionGauge returns the eni_operator_ec2_permission_missing
// gauge, registered with reg when reg is not nil.
func NewPermissionGauge(reg prometheus.Registerer) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "eni_operator_ec2_permission_missing",
		Help: "1 when the start-up DryRun check found the IAM action missing, by action."}, []string{"action"})
	if reg != nil {
		reg.MustRegister(g)
	}
	return g
}

// Start runs the check until it passes or ctx ends.
func (p *PermissionCheck) Start(ctx context.Context) error {
	retry := p.Retry
	if retry <= 0 {
		retry = 5 * time.Minute
	}
	for {
		err := p.Client.CheckPermissions(ctx, p.Actions, p.Options...)
		missing := MissingActions(err)
		for _, a := range p.Actions {
			v := 0.0
			if slices.Contains(missing, a) {
				v = 1
			}
			if p.Missing != nil {
				p.Missing.WithLabelValues(a).Set(v)
			}
		}
		if err == nil {
			log.FromContext(ctx).Info("EC2 permissions verified", "actions", p.Actions)
			return nil
		}
		log.FromContext(ctx).Error(err, "EC2 permission check failed; the operator keeps running and will check again", "in", retry)
		t := p.Client.clock.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}
