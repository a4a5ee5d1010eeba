package nodeeni

import (
	"flag"
	"fmt"
	"strconv"
	"time"

	"k8s.io/utils/clock"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/eni-operator/eni-operator/internal/cli"
	"github.com/eni-operator/eni-operator/internal/ownership"
)

// Options configure the NodeENI controller, its ENI inventory and the
// leaked-ENI collector. Zero values mean the documented defaults.
// TagPolicies give the tags tag policies put on a node's NodeENI
// interfaces, merged with a NodeENI's spec.tags.
type TagPolicies interface {
	// NodeTags are the node's interfaces' tags; with an error (a policy's
	// expression failed for the node), the spec.tags alone.
	NodeTags(node *corev1.Node, specTags map[string]string) (map[string]string, error)
	// Loaded reports whether the policies the cluster had at start are
	// compiled: until then a policy's tags are not removed.
	Loaded() bool
	// OnChange registers a function called after each change of the
	// policies.
	OnChange(func())
}

type Options struct {
	// Clock times the records of creates (births.go), the collector's
	// grace period and the original's re-listing; the real clock when nil.
	// Pass the EC2 state's Config.Clock, so one clock drives both.
	Clock clock.PassiveClock
	// TagPolicies, when set, give the tags ENITagPolicies with a
	// nodeSelector put on a node's interfaces (the tagger's policies).
	TagPolicies TagPolicies
	// ClusterName is written on every ENI (tag eni-operator.io/cluster)
	// and scopes the inventory: ENIs of another cluster in the same VPC
	// are never read or touched. Required.
	ClusterName string
	// Keys sign and verify the proofs that ENIs are the operator's own
	// (internal/ownership); the operator reads them from the Secret
	// --ownership-key-secret names. Required.
	Keys *ownership.KeyRing
	// ResyncInterval is how often the inventory of the operator's ENIs is
	// refreshed (one paginated DescribeNetworkInterfaces for the whole
	// cluster) and every NodeENI re-checked against it (default 1m).
	ResyncInterval time.Duration
	// CatalogInterval is how often the VPC's subnets and security groups
	// are re-read for name and zone lookups (default 5m). A name that is
	// not found triggers an earlier re-read, at most every MinCatalogRefresh.
	CatalogInterval   time.Duration
	MinCatalogRefresh time.Duration
	// DetachPollInterval is how soon a NodeENI is looked at again after
	// one of its ENIs was told to detach (default 2s): the worker is free
	// meanwhile.
	DetachPollInterval time.Duration
	// CollectorGracePeriod is how old an orphaned, available ENI must be
	// before the collector deletes it (default 5m); it must also have been
	// seen in two inventory refreshes.
	CollectorGracePeriod time.Duration
	// AgentReportGracePeriod is how long after an attachment (its status
	// entry's last change) the InterfacesConfigured condition waits for
	// the node agent's report before it names the node as probably
	// running no agent (default 2m: an agent pod on a new node may still
	// be pulling its image). Either way the condition is False Pending.
	AgentReportGracePeriod time.Duration
	// MaxConcurrentReconciles bounds NodeENIs reconciled at once (default 2).
	MaxConcurrentReconciles int
	// MaxParallelNodes bounds the nodes of one NodeENI whose ENIs are
	// created, attached or removed at once (default 8).
	MaxParallelNodes int
	// RoundNodes is how many nodes' changes a pass makes before it writes
	// what they did (the nodes' ENINodes, the NodeENI's counts and
	// conditions) and goes on (default 100): a rollout over thousands of
	// nodes, paced by AWS's buckets, shows progress and hands each node's
	// agent its ENIs within a round rather than at the end of the pass.
	RoundNodes int
	// DisableController and DisableCollector switch the two parts off
	// (flags --enable-nodeeni-controller=false, --enable-eni-collector=false).
	// The inventory runs whenever either part does.
	DisableController bool
	DisableCollector  bool
	// DryRun makes the controller and the collector change nothing in EC2
	// (no create, attach, detach, delete, modify or tag): they plan as
	// usual and say what they would do in the NodeENIs' status, events,
	// logs and the cleanup metric (outcome "dry-run"). A NodeENI deleted in
	// dry-run keeps its finalizer, since its ENIs stay. The operator sets it
	// from --dry-run.
	DryRun bool
	// SkipNameValidation allows several managers with this controller in
	// one process (tests).
	SkipNameValidation bool
	// Registerer receives the eni_operator_nodeeni_* metrics; nil leaves
	// them unregistered. The operator passes controller-runtime's
	// metrics.Registry; tests pass a fresh registry per manager.
	Registerer prometheus.Registerer
}

// DefaultOptions returns the defaults the flags use.
func DefaultOptions() Options {
	return Options{
		ResyncInterval: time.Minute, CatalogInterval: 5 * time.Minute, MinCatalogRefresh: 10 * time.Second,
		DetachPollInterval: 2 * time.Second, CollectorGracePeriod: 5 * time.Minute, AgentReportGracePeriod: 2 * time.Minute,
		MaxConcurrentReconciles: 2, MaxParallelNodes: 8, RoundNodes: 100,
	}
}

// BindFlags registers the NodeENI flags on fs, with DefaultOptions'
// values as defaults. --cluster-name and the EC2 flags are bound by the
// command.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	d := DefaultOptions()
	fs.DurationVar(&o.ResyncInterval, "nodeeni-resync-interval", d.ResyncInterval,
		"how often the operator's ENIs are listed (one paginated DescribeNetworkInterfaces) and every NodeENI re-checked (> 0)")
	fs.DurationVar(&o.CatalogInterval, "nodeeni-catalog-interval", d.CatalogInterval,
		"how often the VPC's subnets and security groups are re-read for name and zone lookups (> 0)")
	fs.DurationVar(&o.DetachPollInterval, "nodeeni-detach-poll-interval", d.DetachPollInterval,
		"how soon a detaching ENI is looked at again before it is deleted (> 0)")
	fs.DurationVar(&o.CollectorGracePeriod, "nodeeni-collector-grace-period", d.CollectorGracePeriod,
		"age an orphaned, available, operator-owned ENI must reach before the collector deletes it (> 0)")
	fs.DurationVar(&o.AgentReportGracePeriod, "nodeeni-agent-report-grace-period", d.AgentReportGracePeriod,
		"how long InterfacesConfigured waits for a node agent's report on a new attachment before it names the node as running no agent (> 0)")
	fs.IntVar(&o.MaxConcurrentReconciles, "nodeeni-max-concurrent-reconciles", d.MaxConcurrentReconciles, "NodeENIs reconciled at once (>= 1)")
	fs.IntVar(&o.MaxParallelNodes, "nodeeni-max-parallel-nodes", d.MaxParallelNodes, "nodes of one NodeENI whose ENIs change at once (>= 1)")
	fs.BoolFunc("enable-nodeeni-controller", "run the NodeENI controller (default true)", func(s string) error {
		return setNegated(&o.DisableController, s)
	})
	fs.BoolFunc("enable-eni-collector", "run the leaked-ENI collector (default true)", func(s string) error {
		return setNegated(&o.DisableCollector, s)
	})
}

// Validate checks the values the flags set, as the command line gives
// them: intervals and grace periods must be positive and the bounds at
// least 1 (Setup would otherwise replace them silently with the
// defaults). MinCatalogRefresh, which no flag sets, may be 0 (default).
func (o Options) Validate() error {
	var p cli.Problems
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"nodeeni-resync-interval", o.ResyncInterval}, {"nodeeni-catalog-interval", o.CatalogInterval},
		{"nodeeni-detach-poll-interval", o.DetachPollInterval}, {"nodeeni-collector-grace-period", o.CollectorGracePeriod},
		{"nodeeni-agent-report-grace-period", o.AgentReportGracePeriod},
	} {
		p.Check(d.v > 0, d.name, d.v, "a duration > 0, such as 30s, 5m or 1h")
	}
	p.Check(o.MaxConcurrentReconciles >= 1, "nodeeni-max-concurrent-reconciles", o.MaxConcurrentReconciles, "an integer >= 1")
	p.Check(o.MaxParallelNodes >= 1, "nodeeni-max-parallel-nodes", o.MaxParallelNodes, "an integer >= 1")
	if o.MinCatalogRefresh < 0 {
		p.AddErr(fmt.Errorf("nodeeni: MinCatalogRefresh %s is negative", o.MinCatalogRefresh))
	}
	return p.Err()
}

func setNegated(dst *bool, s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*dst = !v
	return nil
}

// withDefaults fills the zero fields from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	def := func(v *time.Duration, dv time.Duration) {
		if *v <= 0 {
			*v = dv
		}
	}
	def(&o.ResyncInterval, d.ResyncInterval)
	def(&o.CatalogInterval, d.CatalogInterval)
	def(&o.MinCatalogRefresh, d.MinCatalogRefresh)
	if o.MinCatalogRefresh > o.CatalogInterval {
		o.MinCatalogRefresh = o.CatalogInterval
	}
	def(&o.DetachPollInterval, d.DetachPollInterval)
	def(&o.CollectorGracePeriod, d.CollectorGracePeriod)
	def(&o.AgentReportGracePeriod, d.AgentReportGracePeriod)
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = d.MaxConcurrentReconciles
	}
	if o.MaxParallelNodes <= 0 {
		o.MaxParallelNodes = d.MaxParallelNodes
	}
	if o.RoundNodes <= 0 {
		o.RoundNodes = d.RoundNodes
	}
	return o
}

// RequiredIAMActions are the EC2 actions the NodeENI controller and the
// collector use (docs/iam/nodeeni.json grants exactly these).
func RequiredIAMActions() []string {
	return append(PreflightIAMActions(), ScopedIAMActions()...)
}

// PreflightIAMActions are the actions the operator's start-up check
// verifies with DryRun calls (ec2.Client.CheckPermissions, with the
// creates carrying the cluster's tag as the real ones do).
func PreflightIAMActions() []string {
	return []string{
		"ec2:DescribeNetworkInterfaces", "ec2:DescribeInstances", "ec2:DescribeInstanceTypes",
		"ec2:DescribeSubnets", "ec2:DescribeSecurityGroups", "ec2:CreateNetworkInterface",
	}
}

// ScopedIAMActions act on existing ENIs, and the IAM document allows them
// only on ENIs carrying the cluster's tag (aws:ResourceTag). A DryRun
// against a placeholder ENI, which has no tags, is refused under that
// document, so a start-up check would report them missing although the
// real calls are allowed. They are checked at first use instead: EC2's
// refusal becomes an EC2Error on the node naming the action. The address
// assignments (secondaryPrivateIPv4Count, Multus pod addresses) could
// not be checked at start anyway: EC2 takes no DryRun for them.
func ScopedIAMActions() []string {
	return []string{
		"ec2:CreateTags", "ec2:DeleteTags", "ec2:AttachNetworkInterface", "ec2:DetachNetworkInterface",
		"ec2:DeleteNetworkInterface", "ec2:ModifyNetworkInterfaceAttribute",
		"ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses",
		"ec2:AssignIpv6Addresses", "ec2:UnassignIpv6Addresses",
	}
}
