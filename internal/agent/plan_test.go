package agent

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/bounded"
)

func nodeENI(name string, spec v1alpha1.NodeENISpec) v1alpha1.NodeENI {
	return v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func eniNode(node string, atts ...v1alpha1.ENIAttachment) *v1alpha1.ENINode {
	return &v1alpha1.ENINode{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: v1alpha1.ENINodeSpec{Attachments: atts}}
}

func att(nodeENI, node, eni, mac string, index int32, status string) v1alpha1.ENIAttachment {
	return v1alpha1.ENIAttachment{NodeENI: nodeENI, NodeID: node, ENIID: eni, MACAddress: mac, DeviceIndex: index, Status: status}
}

// withEarlier gives a NodeENI the status.attachments an operator of an
// earlier version wrote.
func withEarlier(ne v1alpha1.NodeENI, entries ...v1alpha1.ENIAttachment) v1alpha1.NodeENI {
	ne.Status.Attachments = entries
	return ne
}

func TestDesired(t *testing.T) {
	deleting := nodeENI("gone", v1alpha1.NodeENISpec{})
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	cases := []struct {
		name string
		en   *v1alpha1.ENINode
		nes  []v1alpha1.NodeENI
		want []want
	}{
		{"no ENINode", nil, []v1alpha1.NodeENI{nodeENI("a", v1alpha1.NodeENISpec{})}, nil},
		{"no attachments", eniNode("n1"), []v1alpha1.NodeENI{nodeENI("a", v1alpha1.NodeENISpec{})}, nil},
		{"only attached ENIs with a MAC, MAC normalized", eniNode("n1",
			att("a", "n1", "eni-1", "02:AA:BB:CC:DD:01", 2, v1alpha1.AttachmentAttached),
			att("a", "n1", "eni-3", "02:aa:bb:cc:dd:03", 3, v1alpha1.AttachmentCreated),
			att("a", "n1", "eni-4", "02:aa:bb:cc:dd:04", 4, v1alpha1.AttachmentDetaching),
			att("a", "n1", "eni-5", "", 5, v1alpha1.AttachmentAttached)),
			[]v1alpha1.NodeENI{nodeENI("a", v1alpha1.NodeENISpec{MTU: 9001, DeviceIndex: 2})},
			[]want{{NodeENI: "a", ENIID: "eni-1", MAC: "02:aa:bb:cc:dd:01", DeviceIndex: 2, MTU: 9001}}},
		{"an entry naming another node is not this node's", eniNode("n1",
			att("a", "n2", "eni-2", "02:aa:bb:cc:dd:02", 2, v1alpha1.AttachmentAttached)),
			[]v1alpha1.NodeENI{nodeENI("a", v1alpha1.NodeENISpec{})}, nil},
		{"a NodeENI missing or being deleted wants nothing", eniNode("n1",
			att("gone", "n1", "eni-gone", "02:00:00:00:00:09", 1, v1alpha1.AttachmentAttached),
			att("missing", "n1", "eni-missing", "02:00:00:00:00:08", 1, v1alpha1.AttachmentAttached),
			att("", "n1", "eni-unnamed", "02:00:00:00:00:07", 1, v1alpha1.AttachmentAttached)),
			[]v1alpha1.NodeENI{deleting}, nil},
		{"each ENI joined to its NodeENI's spec: stable names from the base index; DPDK defaults", eniNode("n1",
			att("b", "n1", "eni-b2", "02:00:00:00:00:02", 2, v1alpha1.AttachmentAttached),
			att("a", "n1", "eni-a", "02:00:00:00:00:03", 3, v1alpha1.AttachmentAttached),
			att("b", "n1", "eni-b1", "02:00:00:00:00:01", 1, v1alpha1.AttachmentAttached)),
			[]v1alpha1.NodeENI{
				nodeENI("b", v1alpha1.NodeENISpec{InterfaceName: "multus", EnableDPDK: true, DPDKResourceName: "intel.com/dpdk", DPDKPCIAddress: "0000:00:06.0"}),
				nodeENI("a", v1alpha1.NodeENISpec{InterfaceName: "data", DeviceIndex: 3, DPDKDriver: "igb_uio"}),
			}, []want{
				{NodeENI: "a", ENIID: "eni-a", MAC: "02:00:00:00:00:03", DeviceIndex: 3, Name: "data"},
				{NodeENI: "b", ENIID: "eni-b1", MAC: "02:00:00:00:00:01", DeviceIndex: 1, Name: "multus", DPDK: true, Driver: "vfio-pci", Resource: "intel.com/dpdk", PCIAddress: "0000:00:06.0"},
				{NodeENI: "b", ENIID: "eni-b2", MAC: "02:00:00:00:00:02", DeviceIndex: 2, Name: "multus1", DPDK: true, Driver: "vfio-pci", Resource: "intel.com/dpdk", PCIAddress: "0000:00:06.0"},
			}},
		{"an earlier operator's entries count for ENIs the ENINode lacks", eniNode("n1",
			att("a", "n1", "eni-1", "02:00:00:00:00:01", 1, v1alpha1.AttachmentDetaching)),
			[]v1alpha1.NodeENI{withEarlier(nodeENI("a", v1alpha1.NodeENISpec{}),
				att("", "n1", "eni-1", "02:00:00:00:00:01", 1, v1alpha1.AttachmentAttached),
				att("", "n1", "eni-2", "02:00:00:00:00:02", 2, v1alpha1.AttachmentAttached),
				att("", "n2", "eni-3", "02:00:00:00:00:03", 1, v1alpha1.AttachmentAttached))},
			[]want{{NodeENI: "a", ENIID: "eni-2", MAC: "02:00:00:00:00:02", DeviceIndex: 2}}},
		{"no ENINode yet: an earlier operator's entries", nil,
			[]v1alpha1.NodeENI{withEarlier(nodeENI("a", v1alpha1.NodeENISpec{}),
				att("", "n1", "eni-2", "02:00:00:00:00:02", 1, v1alpha1.AttachmentAttached))},
			[]want{{NodeENI: "a", ENIID: "eni-2", MAC: "02:00:00:00:00:02", DeviceIndex: 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := desired("n1", c.en, c.nes, "")
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("desired:\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestStableName(t *testing.T) {
	for _, c := range []struct {
		name        string
		index, base int32
		want        string
	}{{"", 2, 1, ""}, {"multus", 1, 1, "multus"}, {"multus", 3, 1, "multus2"}, {"m", 1, 2, "mi1"}} {
		if got := stableName(c.name, c.index, c.base); got != c.want {
			t.Errorf("stableName(%q, %d, %d) = %q; want %q", c.name, c.index, c.base, got, c.want)
		}
	}
}

func TestConflicts(t *testing.T) {
	ws := []want{
		{NodeENI: "a", ENIID: "e1", MAC: "m1", Name: "data"},
		{NodeENI: "b", ENIID: "e2", MAC: "m1"},
		{NodeENI: "b", ENIID: "e3", MAC: "m3", Name: "data"},
		{NodeENI: "c", ENIID: "e4", MAC: "m4", Name: "data", DPDK: true}, // no netdev: its name is moot
	}
	got := conflicts(ws)
	if len(got) != 2 || !strings.Contains(got["e2"], "MAC address m1") || !strings.Contains(got["e3"], `"data"`) {
		t.Fatalf("conflicts %v", got)
	}
}

func TestFindLink(t *testing.T) {
	mac := "02:00:00:00:00:01"
	phys := link{Index: 3, Name: "ens6", MAC: mac, Type: "device"}
	cases := []struct {
		name      string
		links     []link
		want      string
		wantFound bool
		wantErr   string
	}{
		{"absent", []link{{Index: 1, Name: "lo", Loopback: true}}, "", false, ""},
		{"the physical link", []link{phys}, "ens6", true, ""},
		{"children with the same MAC are not it", []link{
			{Index: 5, Name: "ens6.100", MAC: mac, Type: "vlan", Parent: 3},
			{Index: 6, Name: "ipvl0", MAC: mac, Type: "ipvlan", Parent: 3},
			{Index: 7, Name: "bond0", MAC: mac, Type: "bond"},
			phys,
		}, "ens6", true, ""},
		{"two candidates: none is touched", []link{phys, {Index: 8, Name: "dummy0", MAC: mac, Type: "dummy"}}, "", false, "several interfaces"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, found, err := findLink(c.links, mac)
			if (err != nil) != (c.wantErr != "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("err %v; want %q", err, c.wantErr)
			}
			if found != c.wantFound || l.Name != c.want {
				t.Fatalf("found %v %q; want %v %q", found, l.Name, c.wantFound, c.want)
			}
		})
	}
}

func TestPlanLink(t *testing.T) {
	base := link{Index: 3, Name: "ens6", MAC: "02:00:00:00:00:01", MTU: 1500, Up: true}
	cases := []struct {
		name    string
		l       link
		w       want
		names   map[string]int
		want    []linkAction
		wantErr string
	}{
		{"nothing to do", base, want{MTU: 1500}, nil, nil, ""},
		{"no MTU in the spec leaves it", base, want{}, nil, nil, ""},
		{"MTU and up", link{Index: 3, Name: "ens6", MTU: 1500}, want{MTU: 9001}, nil,
			[]linkAction{{Kind: actMTU, MTU: 9001}, {Kind: actUp}}, ""},
		{"rename first", base, want{Name: "multus", MTU: 9001}, map[string]int{"ens6": 3},
			[]linkAction{{Kind: actRename, Name: "multus"}, {Kind: actMTU, MTU: 9001}}, ""},
		{"a rename sets it up: no up of its own", link{Index: 3, Name: "eth1", MTU: 1500}, want{Name: "multus", MTU: 9001}, nil,
			[]linkAction{{Kind: actRename, Name: "multus"}, {Kind: actMTU, MTU: 9001}}, ""},
		{"name held by another link", base, want{Name: "eth0"}, map[string]int{"eth0": 2}, nil, "another interface"},
		{"already named", link{Index: 3, Name: "multus", Up: true, MTU: 1500}, want{Name: "multus"}, map[string]int{"multus": 3}, nil, ""},
		{"primary interface refused", link{Index: 2, Name: "eth0", DefaultRoute: true}, want{MTU: 9001}, nil, nil, "default route"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := planLink(c.l, c.w, c.names)
			if (err != nil) != (c.wantErr != "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("err %v; want %q", err, c.wantErr)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("plan %+v; want %+v", got, c.want)
			}
		})
	}
}

// The sysfs writes that bind a device to the DPDK driver and give it back
// to its original driver, from every state a crash can leave it in.
func TestDriverPlans(t *testing.T) {
	const a = "0000:00:06.0"
	ov := "bus/pci/devices/" + a + "/driver_override"
	dev := func(driver, override string) pciDevice {
		return pciDevice{Address: a, Exists: true, Driver: driver, Override: override}
	}
	bind := func(d pciDevice) []sysfsWrite { return bindPlan(d, "vfio-pci") }
	restore := func(d pciDevice, original string) []sysfsWrite { return restorePlan(d, original, "vfio-pci") }
	cases := []struct {
		name      string
		got, want []sysfsWrite
	}{
		{"bind from ena", bind(dev("ena", "")), []sysfsWrite{{ov, "vfio-pci"}, {"bus/pci/drivers/ena/unbind", a}, {"bus/pci/drivers_probe", a}}},
		{"bind unbound", bind(dev("", "")), []sysfsWrite{{ov, "vfio-pci"}, {"bus/pci/drivers_probe", a}}},
		{"bind: override set, crashed before the unbind", bind(dev("ena", "vfio-pci")), []sysfsWrite{
			{"bus/pci/drivers/ena/unbind", a}, {"bus/pci/drivers_probe", a}}},
		{"bind: bound by hand, the override makes it stick", bind(dev("vfio-pci", "")), []sysfsWrite{{ov, "vfio-pci"}}},
		{"bind: done", bind(dev("vfio-pci", "vfio-pci")), nil},
		{"restore back to ena", restore(dev("vfio-pci", "vfio-pci"), "ena"), []sysfsWrite{
			{ov, "ena"}, {"bus/pci/drivers/vfio-pci/unbind", a}, {"bus/pci/drivers_probe", a}, {ov, clearOverride}}},
		{"restore, original unknown: the kernel's choice", restore(dev("vfio-pci", "vfio-pci"), ""), []sysfsWrite{
			{ov, clearOverride}, {"bus/pci/drivers/vfio-pci/unbind", a}, {"bus/pci/drivers_probe", a}}},
		{"restore: crashed after the probe", restore(dev("ena", "ena"), "ena"), []sysfsWrite{{ov, clearOverride}}},
		{"restore: crashed after the unbind", restore(dev("", "ena"), "ena"), []sysfsWrite{
			{ov, "ena"}, {"bus/pci/drivers_probe", a}, {ov, clearOverride}}},
		{"restore: nothing to do", restore(dev("ena", ""), "ena"), nil},
		{"restore: kernel's choice already", restore(dev("ena", ""), ""), nil},
		{"restore taken over without an override: leaves the DPDK driver, no override write", restore(dev("vfio-pci", ""), ""), []sysfsWrite{
			{"bus/pci/drivers/vfio-pci/unbind", a}, {"bus/pci/drivers_probe", a}}},
		{"restore back to its original without an override", restore(dev("vfio-pci", ""), "ena"), []sysfsWrite{
			{ov, "ena"}, {"bus/pci/drivers/vfio-pci/unbind", a}, {"bus/pci/drivers_probe", a}, {ov, clearOverride}}},
	}
	for _, c := range cases {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: plan %+v; want %+v", c.name, c.got, c.want)
		}
	}
}

func TestParseReload(t *testing.T) {
	for in, want := range map[string]Reload{
		"": {Mode: ReloadNone}, "none": {Mode: ReloadNone},
		"touch:/run/eni-agent/sriov-reload": {Mode: ReloadTouch, Path: "/run/eni-agent/sriov-reload"},
		"signal:/run/sriovdp/pid":           {Mode: ReloadSignal, Path: "/run/sriovdp/pid"},
	} {
		got, err := ParseReload(in)
		if err != nil || got != want {
			t.Errorf("ParseReload(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if again, _ := ParseReload(got.String()); again != got {
			t.Errorf("%q does not round-trip: %q", in, got.String())
		}
	}
	for _, bad := range []string{"touch", "touch:relative", "signal:", "kill:/x", "none:/x"} {
		if _, err := ParseReload(bad); err == nil {
			t.Errorf("ParseReload(%q) accepted", bad)
		}
	}
}

func TestStatusEntriesCompareWithoutTime(t *testing.T) {
	t0, t1 := metav1.Unix(100, 0), metav1.Unix(200, 0)
	a := []v1alpha1.InterfaceStatus{{ENIID: "e2", State: "Configured", LastUpdated: t0}, {ENIID: "e1", MTU: 9001, LastUpdated: t0}}
	b := []v1alpha1.InterfaceStatus{{ENIID: "e1", MTU: 9001, LastUpdated: t1}, {ENIID: "e2", State: "Configured", LastUpdated: t1}}
	if !sameInterfaces(a, b) {
		t.Fatal("same entries in another order at another time differ")
	}
	b[0].MTU = 1500
	if sameInterfaces(a, b) {
		t.Fatal("an MTU change is not a change")
	}
	got := stamp(a, b, t1)
	if got[0].ENIID != "e1" || !got[0].LastUpdated.Equal(&t1) || !got[1].LastUpdated.Equal(&t0) {
		t.Fatalf("stamp kept the time of the unchanged entry only? %+v", got)
	}
	long := []v1alpha1.InterfaceStatus{{ENIID: "e1", State: "Failed", Message: strings.Repeat("x", 5000)}}
	if got := stamp(nil, long, t1); len(got[0].Message) > bounded.Message {
		t.Fatalf("a %d-byte message is reported; the CRD refuses more than %d", len(got[0].Message), bounded.Message)
	}
}

// NodeENI updates wake an agent only when the spec, the deletion state
// or its node's entries of an earlier operator change: the operator's
// status writes wake nobody.
func TestNodeENIChanged(t *testing.T) {
	base := nodeENI("a", v1alpha1.NodeENISpec{})
	base.Generation = 1
	now := metav1.Now()
	for _, c := range []struct {
		name   string
		change func(*v1alpha1.NodeENI)
		wake   bool
	}{
		{"status only", func(n *v1alpha1.NodeENI) { n.Status.ReadyNodes = 3; n.ResourceVersion = "9" }, false},
		{"labels", func(n *v1alpha1.NodeENI) { n.Labels = map[string]string{"team": "a"} }, false},
		{"spec", func(n *v1alpha1.NodeENI) { n.Spec.MTU = 9001; n.Generation = 2 }, true},
		{"deletion", func(n *v1alpha1.NodeENI) { n.DeletionTimestamp = &now }, true},
		{"an earlier operator's entry of this node", func(n *v1alpha1.NodeENI) {
			n.Status.Attachments = []v1alpha1.ENIAttachment{att("", "n1", "eni-1", "02:00:00:00:00:01", 1, v1alpha1.AttachmentAttached)}
		}, true},
		{"an earlier operator's entry of another node", func(n *v1alpha1.NodeENI) {
			n.Status.Attachments = []v1alpha1.ENIAttachment{att("", "n2", "eni-2", "02:00:00:00:00:02", 1, v1alpha1.AttachmentAttached)}
		}, false},
	} {
		cur := base.DeepCopy()
		c.change(cur)
		if got := nodeENIChanged("n1", &base, cur); got != c.wake {
			t.Errorf("%s: wakes %v; want %v", c.name, got, c.wake)
		}
	}
}

// A dpdkPCIAddress from the spec is bound only when it is the ENI's own
// device: a wrong address must not take the node's primary interface or
// another ENI away from the kernel.
func TestSpecDeviceProblem(t *testing.T) {
	w := want{MAC: "02:00:00:00:00:01", Driver: "vfio-pci"}
	eniLink := link{Name: "ens6", MAC: w.MAC}
	tests := []struct {
		name   string
		names  []string
		l      link
		found  bool
		driver string
		ours   bool
		refuse string
	}{
		{name: "the ENI's own interface", names: []string{"ens6"}, l: eniLink, found: true, driver: "ena"},
		{name: "the primary interface", names: []string{"ens5"}, l: eniLink, found: true, driver: "ena", refuse: "device of interface ens5"},
		{name: "another interface while the ENI's is not there", names: []string{"ens7"}, driver: "ena", refuse: "not of this ENI's interface"},
		{name: "no interface, bound to the DPDK driver already", driver: "vfio-pci"},
		{name: "no interface, bound to another driver", driver: "nvme", refuse: "no network interface"},
		{name: "no interface, no driver", refuse: "no network interface"},
		{name: "bound by this agent before", names: []string{"ens6"}, driver: "vfio-pci", ours: true},
	}
	for _, tt := range tests {
		x := &iface{w: w, l: tt.l, found: tt.found}
		if tt.ours {
			x.rec = &deviceRecord{PCIAddress: "0000:00:05.0", BoundDriver: w.Driver}
		}
		got := specDeviceProblem(x, pciDevice{Address: "0000:00:05.0", Exists: true, Driver: tt.driver}, tt.names)
		switch {
		case tt.refuse == "" && got != "":
			t.Errorf("%s: refused: %s", tt.name, got)
		case tt.refuse != "" && !strings.Contains(got, tt.refuse):
			t.Errorf("%s: %q, want a refusal saying %q", tt.name, got, tt.refuse)
		}
	}
}
