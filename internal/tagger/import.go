package tagger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/bounded"
	"github.com/eni-operator/eni-operator/internal/cli"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/tagger/tagplan"
	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

// k8s-eni-tagger kept a cache in one ConfigMap, OriginalCacheName in its
// own namespace: one entry per pod IP, {"info": {"ID": eni, "Tags": the
// ENI's tags when it was looked up, ...}, "pod_uid": uid}. It says
// neither the pod's name nor the tags written for it. The tagger imports
// it once, at its first start, so that the tags of pods deleted while
// the original was stopped and this operator not yet running are still
// removed; it never writes or deletes the ConfigMap (a rollback to the
// original finds it as it left it).
const (
	// OriginalCacheName is k8s-eni-tagger's cache ConfigMap, read in the
	// ledger's namespace (--cache-namespace).
	OriginalCacheName = "eni-tagger-cache"
	// ImportedAnnotation, on ledger shard 00, says the import is done.
	ImportedAnnotation = "eni-operator.io/k8s-eni-tagger-cache-imported"
	// importNamespace is the namespace part of an imported record's pod
	// key: the original did not record the pod's name, and a key that
	// is not a real pod's cannot be confused with one.
	importNamespace = "k8s-eni-tagger-import"
	// The ConfigMap is input anyone who may write ConfigMaps in the
	// namespace can craft: entries and their size are bounded.
	maxImportEntries = 20000
	maxImportValue   = 32 << 10
)

// originalEntry is one value of the original's cache. Entries of its
// pre-UID format carry no pod UID and are not imported: the original
// itself treated them as stale.
type originalEntry struct {
	Info *struct {
		ID   string
		Tags map[string]string
	} `json:"info"`
	PodUID string `json:"pod_uid"`
}

// importCandidate is an entry that passed the format checks.
type importCandidate struct {
	IP, UID, ENI string
	// Before are the ENI's tags when the original looked it up, before
	// it tagged the ENI for the pod.
	Before map[string]string
}

var podUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// parseOriginalCache returns the importable entries of the original's
// ConfigMap, in IP order, and one line per refused entry (bounded by the
// caller).
func parseOriginalCache(data map[string]string) ([]importCandidate, []string) {
	ips := slices.Sorted(maps.Keys(data))
	var out []importCandidate
	var refused []string
	for i, ip := range ips {
		if i >= maxImportEntries {
			refused = append(refused, fmt.Sprintf("%d entries past the first %d", len(ips)-i, maxImportEntries))
			break
		}
		c, why := parseOriginalEntry(ip, data[ip])
		if why != "" {
			refused = append(refused, bounded.Quoted(ip)+": "+why)
			continue
		}
		out = append(out, c)
	}
	return out, refused
}

func parseOriginalEntry(ip, raw string) (importCandidate, string) {
	if len(raw) > maxImportValue {
		return importCandidate{}, fmt.Sprintf("value of %d bytes (at most %d)", len(raw), maxImportValue)
	}
	if _, err := netip.ParseAddr(ip); err != nil {
		return importCandidate{}, "the key is not an IP address"
	}
	var e originalEntry
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		return importCandidate{}, "not JSON of k8s-eni-tagger's cache format"
	}
	switch {
	case e.Info == nil || e.PodUID == "":
		return importCandidate{}, "no pod UID (the original's pre-UID format, which it treated as stale)"
	case !podUID.MatchString(e.PodUID):
		return importCandidate{}, "the pod UID is not a UID"
	case !cli.AWSID("eni", e.Info.ID):
		return importCandidate{}, "the ENI ID is not an ENI ID"
	case len(e.Info.Tags) > tagplan.MaxTagsPerResource:
		return importCandidate{}, fmt.Sprintf("%d tags (an ENI has at most %d)", len(e.Info.Tags), tagplan.MaxTagsPerResource)
	}
	return importCandidate{IP: ip, UID: e.PodUID, ENI: e.Info.ID, Before: e.Info.Tags}, ""
}

// K8sENITaggerHash is k8s-eni-tagger's ownership token for a tag set: the
// first 16 hex digits of the SHA-256 of its sorted "key=value," pairs.
// The tagger keeps such a token where it finds one (pods it tagged are
// adopted without a write) and trusts it for the cache import.
func K8sENITaggerHash(tags map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		fmt.Fprintf(h, "%s=%s,", k, tags[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// importRecord decides what the ledger records for an entry of a pod that
// is gone, from its ENI as it is now. The original did not record the
// tags it wrote, so they are worked out: the ENI's tags that were not on
// it, with the same value, when the original looked it up, reserved keys
// and the token aside. They are recorded only when the ENI's token is
// the original's hash of exactly them — proof that the original wrote
// them for this pod and nobody changed them since; otherwise nothing is
// recorded and nothing will be removed. ENIs of the NodeENI controller
// and outside --subnet-ids are never recorded.
func importRecord(c importCandidate, eni awstypes.ENI, subnets map[string]bool) (Record, string) {
	token := eni.Tags[HashTag]
	if k, ok := tagkeys.HasKeyWithPrefix(eni.Tags, tagkeys.NodeENIPrefix); ok {
		return Record{}, fmt.Sprintf("ENI %s is a NodeENI interface (tag %s)", eni.ID, bounded.Quoted(k))
	}
	if len(subnets) > 0 && !subnets[eni.SubnetID] {
		return Record{}, fmt.Sprintf("ENI %s is in subnet %s, not in --subnet-ids", eni.ID, eni.SubnetID)
	}
	if token == "" {
		return Record{}, fmt.Sprintf("ENI %s carries no %s token: nothing of the pod's left", eni.ID, HashTag)
	}
	applied := map[string]string{}
	for k, v := range eni.Tags {
		if before, ok := c.Before[k]; (ok && before == v) || tagkeys.IsReserved(k) {
			continue
		}
		applied[k] = v
	}
	if K8sENITaggerHash(applied) != token {
		return Record{}, fmt.Sprintf("ENI %s's token %s is not the hash of the tags it gained since the original looked it up: another pod or tool owns them",
			eni.ID, bounded.Quoted(token))
	}
	return Record{Pod: importNamespace + "/" + c.UID, UID: c.UID, ENI: eni.ID, Tags: applied, Hash: token}, ""
}

// importer takes k8s-eni-tagger's cache over, once per start: it
// records the entries of pods that are gone, then removes their tags.
type importer struct {
	ledger    *Ledger
	ec2       EC2
	inventory bool
	apiReader client.Reader
	subnets   map[string]bool
	// namespace is --watch-namespace: the pods the original's cache can
	// hold (all namespaces when empty).
	namespace string
	dryRun    bool
	clock     clock.WithTicker
	// forget removes the tags the ledger records for a pod.
	forget func(ctx context.Context, key string) error
}

// importOriginalCache runs once per start, on the leader, after the
// ledger is loaded: it first removes the tags of imported records left
// from an earlier start, then, unless shard 00 says it was done, imports
// the original's cache and removes the tags of its pods that are gone.
// Pods still running are left to their reconcile, which adopts their
// last-applied annotations.
func (im *importer) importOriginalCache(ctx context.Context) {
	logger := log.FromContext(ctx).WithName("k8s-eni-tagger-import")
	ctx = log.IntoContext(ctx, logger)
	if im.ledger.WaitLoaded(ctx) != nil || im.dryRun {
		return
	}
	done, err := im.importDone(ctx)
	for err != nil {
		logger.Error(err, "reading the ledger's shard 00; retrying")
		if !im.sleep(ctx, 5*time.Second) {
			return
		}
		done, err = im.importDone(ctx)
	}
	if !done {
		im.retry(ctx, "importing k8s-eni-tagger's cache", im.importOnce)
	}
	im.retry(ctx, "removing the tags of pods recorded only by k8s-eni-tagger", im.forgetImported)
}

// retry runs step until it succeeds or ctx ends.
func (im *importer) retry(ctx context.Context, what string, step func(context.Context) error) {
	for {
		err := step(ctx)
		if err == nil {
			return
		}
		log.FromContext(ctx).Error(bounded.Error(err), what+"; retrying")
		if !im.sleep(ctx, 5*time.Second) {
			return
		}
	}
}

// sleep waits d on the importer's clock, false when ctx ends first.
func (im *importer) sleep(ctx context.Context, d time.Duration) bool {
	t := im.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// importDone reports whether shard 00 carries the mark. A memory-only
// ledger has no shard: the import runs at every start, which only finds
// again what it found before (the tags it removed are gone).
func (im *importer) importDone(ctx context.Context) (bool, error) {
	if im.ledger.o.MemoryOnly {
		return false, nil
	}
	var cm corev1.ConfigMap
	err := im.ledger.c.Get(ctx, client.ObjectKey{Namespace: im.ledger.o.Namespace, Name: im.ledger.shardName(0)}, &cm)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return cm.Annotations[ImportedAnnotation] != "", err
}

// importOnce records the entries of gone pods, persists them, then marks
// the import done: a crash before the mark repeats it (same UIDs, same
// records), a crash after it leaves the records to forgetImported.
func (im *importer) importOnce(ctx context.Context) error {
	logger := log.FromContext(ctx)
	var cm corev1.ConfigMap
	err := im.ledger.c.Get(ctx, client.ObjectKey{Namespace: im.ledger.o.Namespace, Name: OriginalCacheName}, &cm)
	if apierrors.IsNotFound(err) {
		return im.markImported(ctx)
	}
	if err != nil {
		return fmt.Errorf("reading k8s-eni-tagger's cache ConfigMap %s/%s: %w", im.ledger.o.Namespace, OriginalCacheName, err)
	}
	candidates, refused := parseOriginalCache(cm.Data)
	if im.inventory {
		// The ENIs are judged as they are now, not as at the last refresh.
		if err := im.ec2.Fresh(ctx, InventoryScope, 0); err != nil {
			return err
		}
	}
	live, err := im.livePods(ctx)
	if err != nil {
		return err
	}
	imported := 0
	for _, c := range candidates {
		if live[c.UID] {
			continue // its reconcile adopts its last-applied annotations
		}
		rec, why, err := im.importEntry(ctx, c)
		if err != nil {
			return err
		}
		if why != "" {
			refused = append(refused, bounded.Quoted(c.IP)+": "+why)
			continue
		}
		im.ledger.Put(rec)
		imported++
	}
	if err := im.ledger.Flush(ctx); err != nil {
		return err
	}
	logger.Info("imported k8s-eni-tagger's cache", "configMap", OriginalCacheName, "entries", len(cm.Data),
		"podsGone", imported, "notImported", len(refused), "examples", bounded.List(refused, "; ", 3))
	return im.markImported(ctx)
}

// importEntry looks up the entry's ENI and decides its record. An ENI
// that is gone leaves nothing to remove.
func (im *importer) importEntry(ctx context.Context, c importCandidate) (Record, string, error) {
	e, ok := im.ec2.ENI(c.ENI)
	if !im.inventory {
		// Without the inventory only the address can be looked up; an
		// address that moved says nothing about the ENI it left.
		var err error
		e, err = im.ec2.LookupByIP(ctx, c.IP)
		switch {
		case ec2.IsNotFound(err):
			return Record{}, "no ENI holds the address any more", nil
		case err != nil:
			return Record{}, "", err
		}
		ok = e.ID == c.ENI
	}
	if !ok {
		return Record{}, fmt.Sprintf("ENI %s no longer holds the address or is gone", c.ENI), nil
	}
	rec, why := importRecord(c, e, im.subnets)
	return rec, why, nil
}

// livePods returns the UIDs of the pods of --watch-namespace (all
// namespaces when it is empty). A switch keeps the original's flags, so
// its cache holds pods of that namespace only; and with it set, the
// operator may list pods there only (RBAC).
func (im *importer) livePods(ctx context.Context) (map[string]bool, error) {
	var pods metav1.PartialObjectMetadataList
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := im.apiReader.List(ctx, &pods, client.InNamespace(im.namespace)); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	live := make(map[string]bool, len(pods.Items))
	for _, p := range pods.Items {
		live[string(p.UID)] = true
	}
	return live, nil
}

// markImported writes the mark on shard 00 with a field manager of its
// own, so the ledger's writes (which own the data) keep it.
func (im *importer) markImported(ctx context.Context) error {
	if im.ledger.o.MemoryOnly {
		return nil
	}
	cm := corev1ac.ConfigMap(im.ledger.shardName(0), im.ledger.o.Namespace).
		WithAnnotations(map[string]string{ImportedAnnotation: im.clock.Now().UTC().Format(time.RFC3339)})
	if err := im.ledger.c.Apply(ctx, cm, client.FieldOwner("eni-operator-import"), client.ForceOwnership); err != nil {
		return fmt.Errorf("marking the import done on ConfigMap %s/%s: %w", im.ledger.o.Namespace, im.ledger.shardName(0), err)
	}
	return nil
}

// forgetImported removes the tags of every imported record: their pods
// were gone when they were imported.
func (im *importer) forgetImported(ctx context.Context) error {
	var errs []error
	for _, rec := range im.ledger.All() {
		if strings.HasPrefix(rec.Pod, importNamespace+"/") {
			if err := im.forget(ctx, rec.Pod); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d imported records: %w", len(errs), errs[0])
	}
	return nil
}
