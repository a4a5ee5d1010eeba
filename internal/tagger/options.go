package tagger

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/eni-operator/eni-operator/internal/cli"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

// Options configure the tagger. Flag names and defaults follow
// k8s-eni-tagger where it had the setting; see docs/tagging.md for the few
// defaults that changed and why.
type Options struct {
	AnnotationKey           string
	WatchNamespace          string
	MaxConcurrentReconciles int
	DryRun                  bool
	AllowSharedENITagging   bool
	SubnetIDs               []string
	ResolveFromMemory       bool
	PersistLedger           bool
	LedgerBatchInterval     time.Duration
	LedgerBatchSize         int
	LedgerShards            int
	PodRateLimitQPS         float64
	PodRateLimitBurst       int
	PodFinalizer            bool
	TagNamespace            string
	AllowKeys, DenyKeys     []string
	// InventoryInterval is how often every ENI of the VPC is re-read to
	// repair drift; 0 turns the inventory off.
	InventoryInterval time.Duration
	// Namespace holds the ledger ConfigMaps (the operator's namespace).
	Namespace string
	// LedgerName is the ConfigMaps' name prefix.
	LedgerName string
	// Registerer receives the tagger's metrics (controller-runtime's
	// registry in production; a fresh one per manager in tests).
	Registerer prometheus.Registerer
	// ControllerName names the controller (unique per manager).
	ControllerName string
	// SkipNameValidation allows several managers with this controller in
	// one process (tests).
	SkipNameValidation bool
	// TagPolicies applies the cluster's ENITagPolicies (the CRD must be
	// installed).
	TagPolicies bool
	// DefaultTags go on every ENI the tagger tags, over the annotation and
	// under the ENITagPolicies' enforced tags (the AWS Load Balancer
	// Controller's --default-tags).
	DefaultTags map[string]string
	// Policies are built from DefaultTags by NewPolicies before the
	// manager's cache, whose pod transform (PodCache) asks which pods they
	// select; Setup builds them when nil, and the transform then keeps no
	// pod for a policy's sake.
	Policies *Policies
	// Clock paces the per-pod rate limits, retries and the pruning of
	// per-pod state; the real clock when nil (tests step a fake one).
	Clock clock.WithTicker
	// KubeAPIQPS and KubeAPIBurst are the operator's Kubernetes budget
	// (--kube-api-qps, --kube-api-burst), which paces the pods' records
	// and conditions (turns.go); 0: not paced.
	KubeAPIQPS   float64
	KubeAPIBurst int
}

// DefaultOptions returns the defaults the flags use.
func DefaultOptions() Options {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "kube-system"
	}
	return Options{
		AnnotationKey: DefaultAnnotationKey, MaxConcurrentReconciles: 100,
		ResolveFromMemory: true, PersistLedger: true,
		LedgerBatchInterval: 2 * time.Second, LedgerBatchSize: 250, LedgerShards: 16,
		PodRateLimitQPS: 0.1, PodRateLimitBurst: 1,
		InventoryInterval: 5 * time.Minute, Namespace: ns, LedgerName: "eni-tagger-cache",
		ControllerName: "pod-tagger", TagPolicies: true,
	}
}

// tagsFlag is a flag of tags, written as an annotation is: k=v,k=v or a
// JSON object.
type tagsFlag struct{ dst *map[string]string }

func (f tagsFlag) String() string {
	if f.dst == nil || len(*f.dst) == 0 {
		return ""
	}
	pairs := make([]string, 0, len(*f.dst))
	for k, v := range *f.dst {
		pairs = append(pairs, k+"="+v)
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ",")
}

func (f tagsFlag) Set(s string) error {
	tags, err := tagplan.ParseAnnotation(s)
	if err != nil {
		return err
	}
	*f.dst = tags
	return nil
}

type listFlag struct{ dst *[]string }

func (l listFlag) String() string {
	if l.dst == nil {
		return ""
	}
	return strings.Join(*l.dst, ",")
}

func (l listFlag) Set(s string) error {
	*l.dst = nil
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l.dst = append(*l.dst, p)
		}
	}
	return nil
}

// BindFlags registers the tagger's flags, with o's values as defaults.
// The ENI_TAGGER_* environment fallbacks of k8s-eni-tagger are applied by
// the command (cmd/eni-operator), for every flag it had.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.AnnotationKey, "annotation-key", o.AnnotationKey, "pod annotation holding the tags (JSON object or k=v,k=v)")
	fs.StringVar(&o.WatchNamespace, "watch-namespace", o.WatchNamespace, "only tag pods of this namespace (empty: all namespaces)")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles, "pods reconciled in parallel (>= 1), besides those waiting for a batched EC2 call or the Kubernetes API budget")
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "change nothing, report what would be done: the tagger computes and reports tag changes (events, log) without writing to AWS, pod annotations or the ledger; the NodeENI controller and the ENI collector make no EC2 change and report theirs in NodeENI status, events, log and metrics")
	fs.BoolVar(&o.AllowSharedENITagging, "allow-shared-eni-tagging", o.AllowSharedENITagging, "tag ENIs shared by several pods (secondary IPs, prefixes) with the merge of their tags; also skips the ownership check")
	fs.Var(listFlag{&o.SubnetIDs}, "subnet-ids", "comma-separated subnet IDs (subnet- and 8 or 17 hex digits) whose ENIs may be tagged (empty: all)")
	fs.BoolVar(&o.ResolveFromMemory, "enable-eni-cache", o.ResolveFromMemory, "resolve pods' ENIs from memory (ledger, inventory) instead of an EC2 lookup per reconcile")
	fs.BoolVar(&o.PersistLedger, "enable-cache-configmap", o.PersistLedger, "persist the ledger of applied tags (and pod-to-ENI cache) in ConfigMaps; needed to clean up tags of pods deleted while the operator was down")
	fs.DurationVar(&o.LedgerBatchInterval, "cache-batch-interval", o.LedgerBatchInterval, "ledger changes are written to the ConfigMaps once they pause this long, at the latest 5 times this after the first (> 0)")
	fs.IntVar(&o.LedgerBatchSize, "cache-batch-size", o.LedgerBatchSize, "write the ledger at once when this many records changed per ConfigMap to write (>= 1)")
	fs.IntVar(&o.LedgerShards, "cache-shards", o.LedgerShards, "number of ledger ConfigMaps, 1-1024 (each holds up to ~900 KiB, about 3,000 pods)")
	fs.Float64Var(&o.PodRateLimitQPS, "pod-rate-limit-qps", o.PodRateLimitQPS, "per-pod limit on AWS tag writes per second (>= 0; 0: no limit); a limited pod is requeued, never dropped")
	fs.IntVar(&o.PodRateLimitBurst, "pod-rate-limit-burst", o.PodRateLimitBurst, "per-pod burst of AWS tag writes (>= 1)")
	fs.BoolVar(&o.PodFinalizer, "pod-finalizer", o.PodFinalizer, "add the eni-tagger.io/finalizer to tagged pods so tags are removed before the pod object goes (docs/operations.md, Uninstall)")
	fs.StringVar(&o.TagNamespace, "tag-namespace", o.TagNamespace, "'enable' prefixes every tag key with the pod's namespace (ns:Key); any other value, empty included, leaves keys alone (k8s-eni-tagger's meaning; a value other than '' and 'enable' is warned about at start)")
	fs.Var(listFlag{&o.AllowKeys}, "tag-allow", "comma-separated key patterns pods may use ('*' wildcard; empty: any key)")
	fs.Var(listFlag{&o.DenyKeys}, "tag-deny", "comma-separated key patterns pods may not use ('*' wildcard); wins over --tag-allow")
	fs.DurationVar(&o.InventoryInterval, "eni-inventory-interval", o.InventoryInterval, "how often all ENIs of the VPC are re-read (a few paginated calls) to repair tag drift (>= 0; 0 turns it off)")
	fs.StringVar(&o.Namespace, "cache-namespace", o.Namespace, "namespace of the ledger ConfigMaps (default $POD_NAMESPACE, else kube-system)")
	fs.BoolVar(&o.TagPolicies, "enable-tag-policies", o.TagPolicies, "apply the cluster's ENITagPolicies to pods' ENIs (docs/tagging.md, Tag policies)")
	fs.Var(tagsFlag{&o.DefaultTags}, "default-tags", "tags on every ENI the tagger tags (k=v,k=v): over the pod's annotation, under ENITagPolicies' enforced tags")
}

// Validate checks the options as the command line gives them; every
// problem names its flag, the value and what is allowed.
func (o Options) Validate() error {
	var p cli.Problems
	p.Check(cli.QualifiedName(o.AnnotationKey), "annotation-key", o.AnnotationKey,
		"a Kubernetes annotation key: [prefix/]name, name of at most 63 letters, digits, '-', '_' or '.'")
	p.Check(o.WatchNamespace == "" || cli.DNSLabel(o.WatchNamespace), "watch-namespace", o.WatchNamespace,
		"a namespace name (lowercase letters, digits and '-', at most 63), or empty for all namespaces")
	p.Check(o.MaxConcurrentReconciles >= 1, "max-concurrent-reconciles", o.MaxConcurrentReconciles, "an integer >= 1")
	for _, s := range o.SubnetIDs {
		p.Check(cli.AWSID("subnet", s), "subnet-ids", s, cli.AWSIDAllowed("subnet")+"; the list is comma-separated, empty for all subnets")
	}
	p.Check(o.LedgerBatchInterval > 0, "cache-batch-interval", o.LedgerBatchInterval, "a duration > 0, such as 2s")
	p.Check(o.LedgerBatchSize >= 1, "cache-batch-size", o.LedgerBatchSize, "an integer >= 1")
	p.Check(o.LedgerShards >= 1 && o.LedgerShards <= maxLedgerShards, "cache-shards", o.LedgerShards, fmt.Sprintf("an integer from 1 to %d", maxLedgerShards))
	p.Check(o.PodRateLimitQPS >= 0 && cli.Finite(o.PodRateLimitQPS), "pod-rate-limit-qps", o.PodRateLimitQPS, "a number >= 0 (0: no per-pod limit)")
	p.Check(o.PodRateLimitBurst >= 1, "pod-rate-limit-burst", o.PodRateLimitBurst, "an integer >= 1")
	p.Check(o.InventoryInterval >= 0, "eni-inventory-interval", o.InventoryInterval, "a duration >= 0, such as 5m (0 turns the drift-repair inventory off)")
	p.Check(cli.DNSLabel(o.Namespace), "cache-namespace", o.Namespace, "a namespace name (lowercase letters, digits and '-', at most 63)")
	for _, l := range []struct {
		name string
		keys []string
	}{{"tag-allow", o.AllowKeys}, {"tag-deny", o.DenyKeys}} {
		for _, k := range l.keys {
			p.Check(strings.TrimSpace(k) != "" && len(k) <= maxTagKey, l.name, k,
				"comma-separated tag key patterns ('*' wildcard), each 1-128 characters like the keys it matches")
			// A pattern outside the keys' character rule matches no key
			// a pod may write: refused rather than silently useless.
			if err := tagkeys.CheckKey(k); err != nil && strings.TrimSpace(k) != "" {
				p.Add(l.name, k, "a tag key pattern that keeps the tag keys' character rule; "+err.Error())
			}
		}
	}
	if err := o.policy().Validate(); err != nil {
		p.AddErr(err)
	}
	if len(o.DefaultTags) > 0 {
		if _, err := NewPolicies(o.DefaultTags); err != nil {
			p.Add("default-tags", tagsFlag{&o.DefaultTags}.String(), "tags pods could ask for: "+err.Error())
		}
	}
	return p.Err()
}

// maxLedgerShards bounds --cache-shards: each shard is a ConfigMap.
const maxLedgerShards = 1024

// maxTagKey is EC2's longest tag key.
const maxTagKey = 128

// policy is the tag policy the flags ask for. --tag-namespace keeps
// k8s-eni-tagger's meaning exactly: only "enable" (case-sensitive)
// namespaces keys, with the pod's namespace; any other value turns
// namespacing off, so a manifest written for the original (say
// --tag-namespace=disabled) writes the same keys here.
func (o Options) policy() tagplan.Policy {
	p := tagplan.Policy{Allow: o.AllowKeys, Deny: o.DenyKeys}
	if o.TagNamespace == tagplan.NamespacingPodNamespace {
		p.Namespacing = tagplan.NamespacingPodNamespace
	}
	return p
}

// Warnings says which accepted settings do not do what they may seem to,
// for the command to log at start.
func (o Options) Warnings() []string {
	if o.TagNamespace == "" || o.TagNamespace == tagplan.NamespacingPodNamespace {
		return nil
	}
	return []string{fmt.Sprintf("--tag-namespace=%s leaves tag keys unprefixed: only %q prefixes them (with the pod's namespace), as in k8s-eni-tagger",
		cli.Show(o.TagNamespace), tagplan.NamespacingPodNamespace)}
}
