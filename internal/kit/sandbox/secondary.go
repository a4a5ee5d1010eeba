package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/attachdefs"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/podaddrs"
)

// The secondary network: a NodeENI that selects its subnet by tags and
// makes its interfaces a Multus network (an attachment definition, the
// pods' addresses registered on the ENIs), and one Multus pod on it.
// Multus is not in the sandbox: the sandbox installs its CRD
// (hack/demo/network-attachment-definitions.yaml) and writes the pod's
// network status as Multus would.
const (
	// secondaryTagKey and secondaryTagValue select the network's subnet
	// (hack/demo/world.json tags one subnet so).
	secondaryTagKey, secondaryTagValue = "network", "data"
	secondaryNodeENIName               = "data-plane"
	secondaryInterface                 = "data"
	secondaryNamespace                 = "cnf"
	secondaryPodName                   = "cnf-0"
	// secondaryPodInterface is the pod's interface on the network.
	secondaryPodInterface = "net1"
	// multusNetworksAnnotation is a pod's request for Multus networks.
	multusNetworksAnnotation = "k8s.v1.cni.cncf.io/networks"
)

// planSecondary returns the secondary network's NodeENI for the nodes of
// the zone of the world's subnet tagged secondaryTagKey=secondaryTagValue
// (the first zone by name, with several), nil when no subnet is.
func planSecondary(ctx context.Context, ec2c *ec2.Client) (*v1alpha1.NodeENI, error) {
	subnets, err := ec2c.Subnets(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing subnets: %w", err)
	}
	var zones []string
	for _, s := range subnets {
		if s.Tags[secondaryTagKey] == secondaryTagValue {
			zones = append(zones, s.AvailabilityZone)
		}
	}
	if len(zones) == 0 {
		return nil, nil
	}
	return secondaryNodeENI(slices.Min(zones)), nil
}

// secondaryNodeENI is the network's NodeENI: device index 1, which the
// other demo NodeENI (index 2) leaves free on every instance type of the
// world, m5.large's three interfaces included.
func secondaryNodeENI(zone string) *v1alpha1.NodeENI {
	return &v1alpha1.NodeENI{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "NodeENI"},
		ObjectMeta: metav1.ObjectMeta{Name: secondaryNodeENIName},
		Spec: v1alpha1.NodeENISpec{
			NodeSelector:       map[string]string{corev1.LabelTopologyZone: zone},
			SubnetSelector:     []v1alpha1.SubnetSelectorTerm{{Tags: map[string]v1alpha1.TagValue{secondaryTagKey: secondaryTagValue}}},
			SecurityGroupNames: []string{"multus-sg"},
			DeviceIndex:        1,
			Description:        "the sandbox's secondary network (Multus)",
			InterfaceName:      secondaryInterface,
			Multus: &v1alpha1.MultusSpec{RegisterPodAddresses: true,
				AttachmentDefinition: &v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{secondaryNamespace}},
				// The pods' range, kept free of the ENIs' own addresses.
				PodAddressReservation: &v1alpha1.PodAddressReservationSpec{PrefixLength: 27}},
		},
	}
}

// demoEnv is what the demo's steps work with.
type demoEnv struct {
	k8s     client.Client
	reader  *ec2.Client
	nodes   []node
	timeout time.Duration
	say     func(string, ...any)
}

// apply applies the demo (applyDemo) and the secondary network
// (applySecondary), and returns the step to run once they converged.
func (d demoEnv) apply(ctx context.Context, ne *v1alpha1.NodeENI) (func(context.Context) error, error) {
	if err := applyDemo(ctx, d.k8s, d.reader, d.nodes, ne); err != nil {
		return nil, err
	}
	return d.applySecondary(ctx)
}

// applySecondary creates the network's namespace (before the NodeENI, so
// its definition is written at once) and its NodeENI, and returns the
// step to run once the demo converged (runSecondary); nothing when the
// world has no subnet for the network.
func (d demoEnv) applySecondary(ctx context.Context) (func(context.Context) error, error) {
	ne, err := planSecondary(ctx, d.reader)
	if err != nil || ne == nil {
		if err == nil {
			d.say("no subnet of the world is tagged %s=%s: no secondary network (Multus) in this demo", secondaryTagKey, secondaryTagValue)
		}
		return nil, err
	}
	d.say("applying the secondary network: namespace %s, NodeENI %s (the nodes of zone %s, subnetSelector tags %s=%s, interface %s, Multus pod addresses, a reserved /27 pods' range and attachment definition)",
		secondaryNamespace, ne.Name, ne.Spec.NodeSelector[corev1.LabelTopologyZone], secondaryTagKey, secondaryTagValue, secondaryInterface)
	if err := createNamespace(ctx, d.k8s, secondaryNamespace, nil); err != nil {
		return nil, err
	}
	if err := d.k8s.Create(ctx, ne); err != nil {
		return nil, fmt.Errorf("NodeENI %s: %w", ne.Name, err)
	}
	return d.runSecondary, nil
}

// runSecondary waits for the network's attachment definition, starts the
// Multus pod on the first node with the NodeENI's ENI attached (an
// address of the definition's range no ENI holds, on the ENI's MAC, as
// Multus and whereabouts would) and waits until EC2 shows the address on
// the ENI and the NodeENI's PodAddressesRegistered condition counts it.
func (d demoEnv) runSecondary(ctx context.Context) error {
	k8s, ec2c, say := d.k8s, d.reader, d.say
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	var cfg defConfig
	err := poll(ctx, say, func() (string, bool, error) {
		u := newDefinition()
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: secondaryNamespace, Name: secondaryNodeENIName}, u); err != nil {
			return fmt.Sprintf("NetworkAttachmentDefinition %s/%s not written yet", secondaryNamespace, secondaryNodeENIName), false, client.IgnoreNotFound(err)
		}
		c, err := parseDefConfig(u)
		cfg = c
		return "", err == nil, err
	})
	if err != nil {
		return fmt.Errorf("the secondary network's definition: %w", err)
	}
	at, n, err := attachedENI(ctx, k8s, d.nodes)
	if err != nil {
		return err
	}
	enis, err := ec2c.ListENIs(ctx)
	if err != nil {
		return fmt.Errorf("listing ENIs: %w", err)
	}
	addr, err := freeAddress(cfg, enis)
	if err != nil {
		return err
	}
	say("starting Multus pod %s/%s on %s: address %s of %s's range on ENI %s (MAC %s), the network status written as Multus would",
		secondaryNamespace, secondaryPodName, n.Name, addr, secondaryNodeENIName, at.ENIID, at.MACAddress)
	if err := startMultusPod(ctx, k8s, n, podNetworks{podIP: podIPOf(n, enis), mac: at.MACAddress, addr: addr}); err != nil {
		return err
	}
	return poll(ctx, say, func() (string, bool, error) {
		e, err := ec2c.GetENI(ctx, at.ENIID)
		if err != nil {
			return "", false, err
		}
		var ne v1alpha1.NodeENI
		if err := k8s.Get(ctx, client.ObjectKey{Name: secondaryNodeENIName}, &ne); err != nil {
			return "", false, err
		}
		c := meta.FindStatusCondition(ne.Status.Conditions, v1alpha1.ConditionPodAddressesRegistered)
		held := slices.Contains(e.SecondaryIPs, addr.String())
		// The condition is True with no pod too ("Multus pod addresses
		// registered: 0, ..."): the count says this pod's address is in it.
		counted := c != nil && c.Status == metav1.ConditionTrue && !strings.Contains(c.Message, "registered: 0,")
		var pod corev1.Pod
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: secondaryNamespace, Name: secondaryPodName}, &pod); err != nil {
			return "", false, err
		}
		gate := gateOf(&pod)
		return fmt.Sprintf("address %s on ENI %s in EC2: %t; NodeENI %s %s counts it: %t; the pod's readiness gate: %s", addr, at.ENIID, held,
			secondaryNodeENIName, v1alpha1.ConditionPodAddressesRegistered, counted, gate), held && counted && gate == "True "+podaddrs.ReasonRegistered, nil
	})
}

// poll calls step every 300 ms until it is done or ctx ends, saying each
// new state.
func poll(ctx context.Context, say func(string, ...any), step func() (string, bool, error)) error {
	last := ""
	for {
		state, done, err := step()
		if done {
			return nil
		}
		if err == nil && state != last && state != "" {
			say("waiting: %s", state)
			last = state
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return err
			}
			return fmt.Errorf("not within the timeout: %s", state)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// attachedENI returns the first node (by name) with the NodeENI's ENI
// attached, and that attachment as its ENINode records it.
func attachedENI(ctx context.Context, k8s client.Client, nodes []node) (v1alpha1.ENIAttachment, node, error) {
	for _, n := range nodes {
		var en v1alpha1.ENINode
		if err := k8s.Get(ctx, client.ObjectKey{Name: n.Name}, &en); err != nil {
			if client.IgnoreNotFound(err) == nil {
				continue
			}
			return v1alpha1.ENIAttachment{}, n, err
		}
		for _, a := range en.Spec.Attachments {
			if a.NodeENI == secondaryNodeENIName && a.Status == v1alpha1.AttachmentAttached && a.MACAddress != "" {
				return a, n, nil
			}
		}
	}
	return v1alpha1.ENIAttachment{}, node{}, fmt.Errorf("no node has NodeENI %s's ENI attached", secondaryNodeENIName)
}

// freeAddress is the first address of the definition's whereabouts range
// that no ENI holds, as whereabouts would hand out.
func freeAddress(cfg defConfig, enis []awstypes.ENI) (netip.Addr, error) {
	start, err1 := netip.ParseAddr(cfg.IPAM.RangeStart)
	end, err2 := netip.ParseAddr(cfg.IPAM.RangeEnd)
	if cfg.IPAM.Type != "whereabouts" || err1 != nil || err2 != nil {
		return netip.Addr{}, fmt.Errorf("definition %s: not a whereabouts range (%+v)", secondaryNodeENIName, cfg.IPAM)
	}
	used := map[string]bool{}
	for _, e := range enis {
		used[e.PrimaryIP] = true
		for _, ip := range e.SecondaryIPs {
			used[ip] = true
		}
	}
	for a := start; a.IsValid() && !end.Less(a); a = a.Next() {
		if !used[a.String()] {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("definition %s: no free address in %s-%s", secondaryNodeENIName, start, end)
}

// podIPOf is the pod's address on the default network: a secondary
// address of the node's primary ENI, as the VPC CNI gives ("" if none).
func podIPOf(n node, enis []awstypes.ENI) string {
	for _, e := range enis {
		if e.Attachment != nil && e.Attachment.InstanceID == n.Instance && e.Attachment.DeviceIndex == 0 && len(e.SecondaryIPs) > 0 {
			return e.SecondaryIPs[0]
		}
	}
	return ""
}

// networkStatus is an entry of Multus' network-status annotation.
type networkStatus struct {
	Name      string   `json:"name"`
	Interface string   `json:"interface"`
	IPs       []string `json:"ips,omitempty"`
	MAC       string   `json:"mac,omitempty"`
	Default   bool     `json:"default,omitempty"`
	DNS       struct{} `json:"dns"`
}

// podNetworks are the Multus pod's addresses: podIP on the default
// network ("" none), addr on the secondary network's interface of MAC mac.
type podNetworks struct {
	podIP, mac string
	addr       netip.Addr
}

// startMultusPod creates the Multus pod on n asking for the network,
// writes its status (Running) as a kubelet would and then its network
// status as Multus would: the default network and, on the ENI's MAC, the
// address whereabouts gave.
func startMultusPod(ctx context.Context, k8s client.Client, n node, nw podNetworks) error {
	podIP, mac, addr := nw.podIP, nw.mac, nw.addr
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: secondaryPodName, Namespace: secondaryNamespace,
			Labels:      map[string]string{"app.kubernetes.io/part-of": "eni-sandbox"},
			Annotations: map[string]string{multusNetworksAnnotation: secondaryNodeENIName}},
		Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: podaddrs.GateCondition}}},
	}
	if err := k8s.Create(ctx, pod); err != nil {
		return fmt.Errorf("pod %s/%s: %w", secondaryNamespace, secondaryPodName, err)
	}
	unset := pod.DeepCopy()
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, HostIP: n.IP, PodIP: podIP, StartTime: &metav1.Time{Time: time.Now()}}
	if podIP != "" {
		pod.Status.PodIPs = []corev1.PodIP{{IP: podIP}}
	}
	if err := k8s.Status().Patch(ctx, pod, client.StrategicMergeFrom(unset)); err != nil {
		return fmt.Errorf("pod %s/%s status: %w", secondaryNamespace, secondaryPodName, err)
	}
	status := []networkStatus{{Name: "aws-cni", Interface: "eth0", Default: true},
		{Name: secondaryNamespace + "/" + secondaryNodeENIName, Interface: secondaryPodInterface, IPs: []string{addr.String()}, MAC: strings.ToLower(mac)}}
	if podIP != "" {
		status[0].IPs = []string{podIP}
	}
	b, err := json.Marshal(status)
	if err != nil {
		return err
	}
	unset = pod.DeepCopy()
	pod.Annotations[podaddrs.NetworkStatusAnnotation] = string(b)
	if err := k8s.Patch(ctx, pod, client.MergeFrom(unset)); err != nil {
		return fmt.Errorf("pod %s/%s network status: %w", secondaryNamespace, secondaryPodName, err)
	}
	return nil
}

// defConfig is the part of a definition's CNI configuration the sandbox
// reads.
type defConfig struct {
	Type   string `json:"type"`
	Master string `json:"master"`
	Device string `json:"device"`
	Mode   string `json:"mode"`
	IPAM   struct {
		Type       string   `json:"type"`
		Range      string   `json:"range"`
		RangeStart string   `json:"range_start"`
		RangeEnd   string   `json:"range_end"`
		Exclude    []string `json:"exclude"`
	} `json:"ipam"`
}

func parseDefConfig(u *unstructured.Unstructured) (defConfig, error) {
	var c defConfig
	s, _, _ := unstructured.NestedString(u.Object, "spec", "config")
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return c, fmt.Errorf("definition %s/%s: spec.config: %w", u.GetNamespace(), u.GetName(), err)
	}
	return c, nil
}

// newDefinition is an empty NetworkAttachmentDefinition.
func newDefinition() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(attachdefs.GroupVersionKind())
	return u
}
