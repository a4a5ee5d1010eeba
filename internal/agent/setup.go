package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/cli"
)

// Defaults of Options.
const (
	DefaultSysfsRoot = "/sys"
	DefaultStateFile = "/var/lib/eni-agent/state.json"
	DefaultRetryBase = time.Second
	DefaultRetryMax  = time.Minute
)

// Options configure the agent. Zero values mean the documented defaults.
type Options struct {
	// NodeName is the node the agent configures (the downward API's
	// spec.nodeName). Required.
	NodeName string
	// Netlink is a handle of the network namespace to configure. nil opens
	// one in NetNS.
	Netlink *netlink.Handle
	// NetNS is the namespace whose link events wake the agent up, and
	// where Netlink is opened when nil. nil is the agent's own namespace:
	// the host's, as the DaemonSet runs with hostNetwork.
	NetNS *netns.NsHandle
	// SysfsRoot is where sysfs is (default /sys).
	SysfsRoot string
	// DefaultDPDKDriver is used when a NodeENI enables DPDK without
	// dpdkDriver (default vfio-pci).
	DefaultDPDKDriver string
	// SRIOVConfig is the SR-IOV device plugin's config.json; "" turns
	// publishing to the device plugin off.
	SRIOVConfig string
	// SRIOVReload is how the device plugin learns of a new config.
	SRIOVReload Reload
	// StateFile keeps what the agent must remember across restarts
	// (default /var/lib/eni-agent/state.json, on a hostPath volume).
	StateFile string
	// RetryBase and RetryMax bound the backoff of the look again at
	// interfaces that are pending or failed (defaults 1s and 1m).
	RetryBase, RetryMax time.Duration
	// Registerer receives the eni_agent_* metrics; nil leaves them
	// unregistered.
	Registerer prometheus.Registerer
	// NodeIPs are the node's own addresses (the downward API's
	// status.hostIPs: its InternalIPs). A link holding one is the node's
	// primary interface, which the agent never touches, whatever MAC
	// address an ENINode's attachment names. Empty: only the default route
	// and the link's kind tell the primary interface apart.
	NodeIPs []string
	// Clock paces the link subscription's retries and the waits for a
	// device's driver to bind (default: the real clock).
	Clock clock.Clock

	// sysfsWrite replaces sysfs writes (tests: a fake kernel).
	sysfsWrite func(path, value string) error
	// sriovRace runs between the agent's read and its write of the
	// device plugin config (tests: someone else's edit).
	sriovRace func()
	// netlink, when set, is used instead of Netlink (tests: a handle
	// that counts the writes).
	netlink netlinkOps
	// linkKinds replaces the link kinds an ENI's interface may have
	// (tests: their stand-in ENIs are dummy or veth links).
	linkKinds []string
}

func (o Options) withDefaults() Options {
	if o.SysfsRoot == "" {
		o.SysfsRoot = DefaultSysfsRoot
	}
	if o.DefaultDPDKDriver == "" {
		o.DefaultDPDKDriver = DefaultDPDKDriver
	}
	if o.StateFile == "" {
		o.StateFile = DefaultStateFile
	}
	if o.RetryBase <= 0 {
		o.RetryBase = DefaultRetryBase
	}
	if o.RetryMax <= 0 {
		o.RetryMax = DefaultRetryMax
	}
	if o.RetryMax < o.RetryBase {
		o.RetryMax = o.RetryBase
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return o
}

// Validate checks the options as the command line gives them (every
// problem names its flag, the value and what is allowed): the node name
// is a Kubernetes node name, paths are absolute, the DPDK driver is a
// driver name (it becomes a sysfs path element), --retry-max is at least
// RetryBase. Setup does not call it: zero values keep their defaults there.
func (o Options) Validate() error {
	var p cli.Problems
	switch {
	case o.NodeName == "":
		p.AddErr(errors.New("--node-name (or NODE_NAME) is required: the DaemonSet sets it from spec.nodeName"))
	case !cli.DNSSubdomain(o.NodeName):
		p.Add("node-name", o.NodeName, "a Kubernetes node name (lowercase letters, digits, '-' and '.', at most 253)")
	}
	for _, ip := range o.NodeIPs {
		p.Check(net.ParseIP(strings.TrimSpace(ip)) != nil, "node-ip", ip, "an IP address of the node, such as the downward API's status.hostIPs")
	}
	p.Check(filepath.IsAbs(o.SysfsRoot), "sysfs-root", o.SysfsRoot, "an absolute path, such as /sys")
	p.Check(driverName.MatchString(o.DefaultDPDKDriver), "dpdk-driver", o.DefaultDPDKDriver,
		"a kernel driver name of letters, digits, '-' and '_', such as vfio-pci, igb_uio or uio_pci_generic")
	p.Check(o.SRIOVConfig == "" || filepath.IsAbs(o.SRIOVConfig), "sriov-config", o.SRIOVConfig,
		"an absolute path of the device plugin's config.json, or empty to publish nothing")
	p.Check(filepath.IsAbs(o.StateFile), "state-file", o.StateFile, "an absolute path on a hostPath volume, such as "+DefaultStateFile)
	base := o.RetryBase
	if base <= 0 {
		base = DefaultRetryBase
	}
	p.Check(o.RetryMax >= base, "retry-max", o.RetryMax, "a duration >= "+base.String()+", such as 1m")
	return p.Err()
}

var driverName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CacheOptions are the cache the agent needs: its node's ENINode alone
// (a field selector, so no agent holds or is woken by other nodes') and
// the NodeENIs, whose specs it joins to its attachments. Managed fields
// are dropped; the agent never reads them.
func CacheOptions(node string) cache.Options {
	strip := cache.TransformStripManagedFields()
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&v1alpha1.ENINode{}: {Field: fields.OneTermEqualSelector("metadata.name", node), Transform: strip},
		&v1alpha1.NodeENI{}: {Transform: strip},
	}}
}

// Setup registers the agent with the manager: a controller watching the
// node's ENINode, the NodeENIs' specs and the link events of its
// namespace, and the link watcher. The manager's scheme must include
// v1alpha1, and its cache should be CacheOptions(o.NodeName).
func Setup(mgr ctrl.Manager, o Options) error {
	if o.NodeName == "" {
		return errors.New("agent: the node name is required (--node-name, or NODE_NAME from the downward API)")
	}
	o = o.withDefaults()
	h, err := openNetlink(o)
	if err != nil {
		return err
	}
	w := &linkWatch{ns: o.NetNS, node: o.NodeName, events: make(chan event.GenericEvent, 1),
		log: mgr.GetLogger().WithName("eni-agent-links"), clock: o.Clock}
	if err := mgr.Add(w); err != nil {
		return err
	}
	r := &reconciler{
		client: mgr.GetClient(), node: o.NodeName, host: host{h: h}, guard: newGuard(o.NodeIPs, o.linkKinds),
		defaultDriver: o.DefaultDPDKDriver, watch: w, metrics: newMetrics(o.Registerer),
		retryBase: o.RetryBase, retryMax: o.RetryMax, saved: &savedState{path: o.StateFile},
	}
	r.dpdk = &dpdkBinder{sys: SysFS{Root: o.SysfsRoot, write: o.sysfsWrite, clock: o.Clock}, host: r.host, guard: r.guard, metrics: r.metrics, saved: r.saved}
	if o.SRIOVConfig != "" {
		r.sriov = &sriovPublisher{path: o.SRIOVConfig, reload: o.SRIOVReload, metrics: r.metrics, saved: r.saved, race: o.sriovRace}
	}
	toNode := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.NodeName}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("eni-agent").
		Watches(&v1alpha1.ENINode{}, toNode).
		Watches(&v1alpha1.NodeENI{}, toNode, builder.WithPredicates(predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool { return nodeENIChanged(o.NodeName, e.ObjectOld, e.ObjectNew) },
		})).
		WatchesRawSource(source.Channel(w.events, toNode)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(r)
}

// openNetlink returns the netlink calls of the namespace to configure:
// the test's, the handle given, or one opened in NetNS (the agent's own
// namespace when nil).
func openNetlink(o Options) (netlinkOps, error) {
	if o.netlink != nil {
		return o.netlink, nil
	}
	if o.Netlink != nil {
		return o.Netlink, nil
	}
	var h *netlink.Handle
	var err error
	if o.NetNS != nil {
		h, err = netlink.NewHandleAt(*o.NetNS)
	} else {
		h, err = netlink.NewHandle()
	}
	if err != nil {
		return nil, fmt.Errorf("agent: opening netlink: %w", err)
	}
	return h, nil
}

// nodeENIChanged tells whether a NodeENI update matters to the agent of
// node: its spec (the generation), its deletion state, or the node's
// entries an operator of an earlier version wrote to status.attachments.
// The operator's status writes (counts, conditions) wake nobody.
func nodeENIChanged(node string, old, cur client.Object) bool {
	if old.GetGeneration() != cur.GetGeneration() || old.GetDeletionTimestamp().IsZero() != cur.GetDeletionTimestamp().IsZero() {
		return true
	}
	o, okOld := old.(*v1alpha1.NodeENI)
	n, okCur := cur.(*v1alpha1.NodeENI)
	if !okOld || !okCur {
		return true
	}
	return !equality.Semantic.DeepEqual(withEarlierEntries(node, nil, []v1alpha1.NodeENI{*o}), withEarlierEntries(node, nil, []v1alpha1.NodeENI{*n}))
}

// linkWatch turns link events of the namespace into reconciles: a
// hot-plugged ENI is configured as soon as the kernel announces it.
// Only links with the MAC address of an ENI of the node count, so the
// veth churn of pods wakes nobody up.
type linkWatch struct {
	ns     *netns.NsHandle
	node   string
	events chan event.GenericEvent
	log    logr.Logger
	clock  clock.Clock

	mu   sync.Mutex
	macs map[string]bool
}

func (w *linkWatch) setMACs(m map[string]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.macs = m
}

func (w *linkWatch) interesting(mac string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.macs[mac]
}

func (w *linkWatch) trigger() {
	select {
	case w.events <- event.GenericEvent{Object: &v1alpha1.ENINode{ObjectMeta: metav1.ObjectMeta{Name: w.node}}}:
	default: // one pending wake-up covers this one
	}
}

// Start subscribes to link events until ctx ends, subscribing again
// (after a pause) when the subscription breaks; every new subscription
// wakes the agent, for the events missed meanwhile.
func (w *linkWatch) Start(ctx context.Context) error {
	pause := 100 * time.Millisecond
	for {
		ch := make(chan netlink.LinkUpdate, 64)
		done := make(chan struct{})
		err := netlink.LinkSubscribeWithOptions(ch, done, netlink.LinkSubscribeOptions{
			Namespace:     w.ns,
			ErrorCallback: func(err error) { w.log.Error(err, "link event subscription") },
		})
		if err != nil {
			w.log.Error(err, "subscribing to link events; the agent falls back to its retries meanwhile")
		} else {
			pause = 100 * time.Millisecond
			w.trigger()
		read:
			for {
				select {
				case <-ctx.Done():
					close(done)
					go drain(ch)
					return nil
				case u, ok := <-ch:
					if !ok {
						break read
					}
					if u.Link != nil && w.interesting(normalizeMAC(u.Attrs().HardwareAddr.String())) {
						w.trigger()
					}
				}
			}
			close(done)
		}
		t := w.clock.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
		pause = min(2*pause, 30*time.Second)
	}
}

// drain empties a subscription channel until netlink closes it, so its
// reader goroutine is never stuck on a send.
func drain(ch <-chan netlink.LinkUpdate) {
	for range ch {
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// node's agent runs, none is elected.
func (w *linkWatch) NeedLeaderElection() bool { return false }
