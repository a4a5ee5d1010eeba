package tagger

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Options configure the tagger. Flag names and defaults follow
// k8s-eni-tagger where it had the setting; see the README for the few
// defaults that changed and why.
type Options struct {
	AnnotationKey           string
	WatchNamespace          string
	MaxConcurrentReconciles int
	DryRun                  bool
	AllowSharedENITagging   bool
	SubnetIDs               []string
	EnableENICache          bool
	EnableCacheConfigMap    bool
	CacheBatchInterval      time.Duration
	CacheBatchSize          int
	CacheShards             int
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
}

// DefaultOptions returns the defaults the flags use.
func DefaultOptions() Options {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "kube-system"
	}
	return Options{
		AnnotationKey: DefaultAnnotationKey, MaxConcurrentReconciles: 100,
		EnableENICache: true, EnableCacheConfigMap: true,
		CacheBatchInterval: 2 * time.Second, CacheBatchSize: 20, CacheShards: 16,
		PodRateLimitQPS: 0.1, PodRateLimitBurst: 1,
		InventoryInterval: 5 * time.Minute, Namespace: ns, LedgerName: "eni-tagger-cache",
		ControllerName: "pod-tagger",
	}
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
// --subnet-ids falls back to $ENI_TAGGER_SUBNET_IDS as in k8s-eni-tagger.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	if o.SubnetIDs == nil && os.Getenv("ENI_TAGGER_SUBNET_IDS") != "" {
		_ = listFlag{&o.SubnetIDs}.Set(os.Getenv("ENI_TAGGER_SUBNET_IDS"))
	}
	fs.StringVar(&o.AnnotationKey, "annotation-key", o.AnnotationKey, "pod annotation holding the tags (JSON object or k=v,k=v)")
	fs.StringVar(&o.WatchNamespace, "watch-namespace", o.WatchNamespace, "only tag pods of this namespace (empty: all namespaces)")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", o.MaxConcurrentReconciles, "pods reconciled in parallel; concurrent reconciles share batched EC2 calls, so keep it well above 1")
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "change nothing, report what would be done: the tagger computes and reports tag changes (events, log) without writing to AWS, pod annotations or the ledger; the NodeENI controller and the ENI collector make no EC2 change and report theirs in NodeENI status, events, log and metrics")
	fs.BoolVar(&o.AllowSharedENITagging, "allow-shared-eni-tagging", o.AllowSharedENITagging, "tag ENIs shared by several pods (secondary IPs, prefixes) with the merge of their tags; also skips the ownership check")
	fs.Var(listFlag{&o.SubnetIDs}, "subnet-ids", "comma-separated subnet IDs whose ENIs may be tagged (empty: all; env ENI_TAGGER_SUBNET_IDS)")
	fs.BoolVar(&o.EnableENICache, "enable-eni-cache", o.EnableENICache, "resolve pods' ENIs from memory (ledger, inventory) instead of an EC2 lookup per reconcile")
	fs.BoolVar(&o.EnableCacheConfigMap, "enable-cache-configmap", o.EnableCacheConfigMap, "persist the ledger of applied tags (and pod-to-ENI cache) in ConfigMaps; needed to clean up tags of pods deleted while the operator was down")
	fs.DurationVar(&o.CacheBatchInterval, "cache-batch-interval", o.CacheBatchInterval, "how often ledger changes are written to the ConfigMaps")
	fs.IntVar(&o.CacheBatchSize, "cache-batch-size", o.CacheBatchSize, "write the ledger at once when this many records changed")
	fs.IntVar(&o.CacheShards, "cache-shards", o.CacheShards, "number of ledger ConfigMaps (each holds up to ~900 KiB, about 3,000 pods)")
	fs.Float64Var(&o.PodRateLimitQPS, "pod-rate-limit-qps", o.PodRateLimitQPS, "per-pod limit on AWS tag writes per second (0: no limit); a limited pod is requeued, never dropped")
	fs.IntVar(&o.PodRateLimitBurst, "pod-rate-limit-burst", o.PodRateLimitBurst, "per-pod burst of AWS tag writes")
	fs.BoolVar(&o.PodFinalizer, "pod-finalizer", o.PodFinalizer, "add the eni-tagger.io/finalizer to tagged pods so tags are removed before the pod object goes (see the README's uninstall section)")
	fs.StringVar(&o.TagNamespace, "tag-namespace", o.TagNamespace, "prefix tag keys: 'enable' uses the pod's namespace (ns:Key), any other value is a fixed prefix, empty leaves keys alone")
	fs.Var(listFlag{&o.AllowKeys}, "tag-allow", "comma-separated key patterns pods may use ('*' wildcard; empty: any key)")
	fs.Var(listFlag{&o.DenyKeys}, "tag-deny", "comma-separated key patterns pods may not use ('*' wildcard); wins over --tag-allow")
	fs.DurationVar(&o.InventoryInterval, "eni-inventory-interval", o.InventoryInterval, "how often all ENIs of the VPC are re-read (a few paginated calls) to repair tag drift; 0 turns it off")
	fs.StringVar(&o.Namespace, "cache-namespace", o.Namespace, "namespace of the ledger ConfigMaps (default $POD_NAMESPACE, else kube-system)")
}

// Validate checks the options.
func (o Options) Validate() error {
	var errs []error
	if o.AnnotationKey == "" {
		errs = append(errs, errors.New("--annotation-key must not be empty"))
	}
	if o.MaxConcurrentReconciles < 1 {
		errs = append(errs, errors.New("--max-concurrent-reconciles must be at least 1"))
	}
	if o.PodRateLimitQPS < 0 || (o.PodRateLimitQPS > 0 && o.PodRateLimitBurst < 1) {
		errs = append(errs, errors.New("--pod-rate-limit-qps must be >= 0, and --pod-rate-limit-burst >= 1 when it is set"))
	}
	for _, s := range o.SubnetIDs {
		if !strings.HasPrefix(s, "subnet-") {
			errs = append(errs, fmt.Errorf("--subnet-ids: %q is not a subnet ID", s))
		}
	}
	if o.CacheBatchSize < 1 || o.CacheBatchInterval <= 0 || o.CacheShards < 1 {
		errs = append(errs, errors.New("--cache-batch-size, --cache-batch-interval and --cache-shards must be positive"))
	}
	if err := o.policy().Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (o Options) policy() Policy {
	return Policy{Allow: o.AllowKeys, Deny: o.DenyKeys, Namespacing: o.TagNamespace}
}
