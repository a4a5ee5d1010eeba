package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// The decision is made from the device's driver as sysfs shows it: a
// device bound to the wanted driver is never written to, whoever bound it
// and whatever the state file says.
func TestDecideDPDK(t *testing.T) {
	vfio := pciDevice{Address: testPCI, Exists: true, Driver: "vfio-pci"}
	vfioOverride := vfio
	vfioOverride.Override = "vfio-pci"
	ena := pciDevice{Address: testPCI, Exists: true, Driver: "ena"}
	tests := []struct {
		name string
		dev  pciDevice
		rec  *deviceRecord
		want dpdkDecision
	}{
		{"bound by this agent, state intact", vfioOverride, &deviceRecord{BoundDriver: "vfio-pci", OriginalDriver: "ena"}, dpdkInPlace},
		{"bound by this agent, override cleared since", vfio, &deviceRecord{BoundDriver: "vfio-pci"}, dpdkInPlace},
		{"bound by dpdk-devbind (no override), no state", vfio, nil, dpdkTakeOver},
		{"bound, state file lost: a fresh record", vfioOverride, &deviceRecord{}, dpdkTakeOver},
		{"bound to the new driver after dpdkDriver changed", vfio, &deviceRecord{BoundDriver: "igb_uio"}, dpdkTakeOver},
		{"kernel driver", ena, nil, dpdkBind},
		{"kernel driver although recorded as bound", ena, &deviceRecord{BoundDriver: "vfio-pci"}, dpdkBind},
		{"no driver", pciDevice{Address: testPCI, Exists: true}, nil, dpdkBind},
		{"another DPDK driver", pciDevice{Address: testPCI, Exists: true, Driver: "igb_uio"}, nil, dpdkBind},
	}
	for _, tt := range tests {
		if got := decideDPDK(tt.dev, tt.rec, "vfio-pci"); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

// caseTwoSpec is the spec of the ENI Manager's "SR-IOV without DPDK"
// sample, as this API spells it: DPDK off, a resource name and the
// device's PCI address.
func caseTwoSpec(s *v1alpha1.NodeENISpec) {
	s.DeviceIndex, s.MTU = 2, 9001
	s.DeleteOnTermination = ptr.To(true)
	s.Description = "SR-IOV without DPDK binding"
	s.EnableDPDK = false
	s.DPDKResourceName = "intel.com/sriov_kernel_1"
	s.DPDKPCIAddress = "0000:00:07.0"
}

func TestKernelSRIOVWants(t *testing.T) {
	spec := v1alpha1.NodeENISpec{}
	caseTwoSpec(&spec)
	got := desired("n1", eniNode("n1", att("k", "n1", "eni-k", "02:00:00:00:00:07", 2, v1alpha1.AttachmentAttached)), []v1alpha1.NodeENI{nodeENI("k", spec)}, "")
	exp := []want{{NodeENI: "k", ENIID: "eni-k", MAC: "02:00:00:00:00:07", DeviceIndex: 2, MTU: 9001,
		Resource: "intel.com/sriov_kernel_1", PCIAddress: "0000:00:07.0"}}
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("desired:\n got %+v\nwant %+v", got, exp)
	}
	tests := []struct {
		name string
		w    want
		pub  bool
	}{
		{"case 2: resource and address, DPDK off", exp[0], true},
		{"no address: published nothing, as the ENI Manager", want{Resource: "intel.com/x"}, false},
		{"no resource", want{PCIAddress: "0000:00:07.0"}, false},
		{"DPDK on: the DPDK path publishes it", want{DPDK: true, Resource: "intel.com/x", PCIAddress: "0000:00:07.0"}, false},
	}
	for _, tt := range tests {
		if got := tt.w.kernelSRIOV(); got != tt.pub {
			t.Errorf("%s: kernelSRIOV %v, want %v", tt.name, got, tt.pub)
		}
	}
}

// A kernel-driver device is published only when the spec's address is the
// device of the ENI's own interface.
func TestKernelDeviceProblem(t *testing.T) {
	w := want{MAC: "02:00:00:00:00:07", Resource: "intel.com/k", PCIAddress: "0000:00:07.0"}
	l := link{Name: "ens7", MAC: w.MAC}
	if msg := kernelDeviceProblem(w, l, "0000:00:07.0"); msg != "" {
		t.Errorf("the ENI's own device refused: %s", msg)
	}
	msg := kernelDeviceProblem(w, l, "0000:00:05.0")
	if !strings.Contains(msg, "not the device of this ENI's interface ens7") || !strings.Contains(msg, "0000:00:05.0") {
		t.Errorf("another device: %q", msg)
	}
}

// Kernel-driver devices are published with the driver sysfs shows, next
// to DPDK ones; interfaces that are not configured, or have no device,
// publish nothing.
func TestPublishableKernelAndDPDK(t *testing.T) {
	kw := want{ENIID: "eni-k", Resource: "intel.com/sriov_kernel_1", PCIAddress: "0000:00:07.0"}
	dw := want{ENIID: "eni-d", DPDK: true, Resource: "intel.com/sriov_dpdk"}
	pw := want{ENIID: "eni-p", Resource: "intel.com/sriov_kernel_1", PCIAddress: "0000:00:08.0"}
	outs := []configResult{
		{w: kw, state: v1alpha1.InterfaceConfigured, kernel: &pciDevice{Address: "0000:00:07.0", Driver: "ena"}},
		{w: dw, state: v1alpha1.InterfaceConfigured, dpdk: &deviceRecord{PCIAddress: "0000:00:06.0", BoundDriver: "vfio-pci"}},
		{w: pw, state: v1alpha1.InterfacePending},
	}
	entries := map[string]v1alpha1.InterfaceStatus{
		"eni-k": {State: v1alpha1.InterfaceConfigured},
		"eni-d": {State: v1alpha1.InterfaceConfigured, DPDKBound: true},
		"eni-p": {State: v1alpha1.InterfacePending},
	}
	res, users := publishable(outs, entries)
	want := []sriovResource{
		{Name: "intel.com/sriov_dpdk", PCIAddresses: []string{"0000:00:06.0"}, Drivers: []string{"vfio-pci"}},
		{Name: "intel.com/sriov_kernel_1", PCIAddresses: []string{"0000:00:07.0"}, Drivers: []string{"ena"}},
	}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("resources:\n got %+v\nwant %+v", res, want)
	}
	if !reflect.DeepEqual(users, resourceUsers{"intel.com/sriov_dpdk": {"eni-d"}, "intel.com/sriov_kernel_1": {"eni-k"}}) {
		t.Fatalf("users %v", users)
	}
}

// An entry that selects the same devices is adopted as it is, in the
// agent's form or in the ENI Manager's (selectors as a list of one): no
// write, no device plugin restart on takeover. Anything selecting more or
// else is someone else's.
func TestSameResource(t *testing.T) {
	e := entryOf(sriovResource{Name: "intel.com/sriov_kernel_1", PCIAddresses: []string{"0000:00:07.0", "0000:00:08.0"}, Drivers: []string{"ena"}})
	tests := []struct {
		name string
		raw  string
		same bool
	}{
		{"the agent's form", `{"resourceName":"sriov_kernel_1","resourcePrefix":"intel.com","selectors":{"pciAddresses":["0000:00:07.0","0000:00:08.0"],"drivers":["ena"]}}`, true},
		{"the ENI Manager's form, other order", `{"resourcePrefix":"intel.com","resourceName":"sriov_kernel_1","selectors":[{"drivers":["ena"],"pciAddresses":["0000:00:08.0","0000:00:07.0"]}]}`, true},
		{"deviceType netDevice", `{"resourceName":"sriov_kernel_1","resourcePrefix":"intel.com","deviceType":"netDevice","selectors":{"pciAddresses":["0000:00:07.0","0000:00:08.0"],"drivers":["ena"]}}`, true},
		{"one device less", `{"resourceName":"sriov_kernel_1","resourcePrefix":"intel.com","selectors":{"pciAddresses":["0000:00:07.0"],"drivers":["ena"]}}`, false},
		{"another driver", `{"resourceName":"sriov_kernel_1","resourcePrefix":"intel.com","selectors":{"pciAddresses":["0000:00:07.0","0000:00:08.0"],"drivers":["vfio-pci"]}}`, false},
		{"two selectors", `{"resourceName":"sriov_kernel_1","resourcePrefix":"intel.com","selectors":[{"pciAddresses":["0000:00:07.0"],"drivers":["ena"]},{"pciAddresses":["0000:00:08.0"],"drivers":["ena"]}]}`, false},
		{"a selector more", `{"resourceName":"sriov_kernel_1","resourcePrefix":"intel.com","selectors":{"pciAddresses":["0000:00:07.0","0000:00:08.0"],"drivers":["ena"],"vendors":["1d0f"]}}`, false},
		{"another field", `{"resourceName":"sriov_kernel_1","resourcePrefix":"intel.com","excludeTopology":true,"selectors":{"pciAddresses":["0000:00:07.0","0000:00:08.0"],"drivers":["ena"]}}`, false},
		{"an accelerator", `{"resourceName":"sriov_kernel_1","resourcePrefix":"intel.com","deviceType":"accelerator","selectors":{"pciAddresses":["0000:00:07.0","0000:00:08.0"],"drivers":["ena"]}}`, false},
		{"another prefix", `{"resourceName":"sriov_kernel_1","resourcePrefix":"example.com","selectors":{"pciAddresses":["0000:00:07.0","0000:00:08.0"],"drivers":["ena"]}}`, false},
	}
	for _, tt := range tests {
		if got := sameResource([]byte(tt.raw), e); got != tt.same {
			t.Errorf("%s: same %v, want %v", tt.name, got, tt.same)
		}
	}
}

// The ENI Manager's entry for the same device is adopted on takeover:
// nothing changes in the file, and the resource becomes the agent's.
func TestMergeSRIOVAdoptsTheENIManagersEntry(t *testing.T) {
	existing := `{"resourceList":[{"resourcePrefix":"intel.com","resourceName":"sriov_kernel_1","selectors":[{"drivers":["ena"],"pciAddresses":["0000:00:07.0"]}]}]}`
	want := []sriovResource{{Name: "intel.com/sriov_kernel_1", PCIAddresses: []string{"0000:00:07.0"}, Drivers: []string{"ena"}}}
	m, err := mergeSRIOV([]byte(existing), nil, want)
	if err != nil {
		t.Fatal(err)
	}
	if m.Changed || len(m.Conflicts) != 0 || !reflect.DeepEqual(m.Owned, []string{"intel.com/sriov_kernel_1"}) {
		t.Fatalf("changed %v, conflicts %v, owned %v", m.Changed, m.Conflicts, m.Owned)
	}
	// Owned now: the same entry stays as it is on the next pass.
	m, err = mergeSRIOV([]byte(existing), m.Owned, want)
	if err != nil || m.Changed {
		t.Fatalf("second pass: changed %v, err %v", m.Changed, err)
	}
	// A device more: rewritten in the agent's form.
	want[0].PCIAddresses = append(want[0].PCIAddresses, "0000:00:08.0")
	m, err = mergeSRIOV([]byte(existing), m.Owned, want)
	if err != nil || !m.Changed {
		t.Fatalf("a device more: changed %v, err %v", m.Changed, err)
	}
	rl := resourceList(t, m.Config)
	if len(rl) != 1 || !reflect.DeepEqual(rl[0]["selectors"], map[string]any{"pciAddresses": []any{"0000:00:07.0", "0000:00:08.0"}, "drivers": []any{"ena"}}) {
		t.Fatalf("rewritten: %v", rl)
	}
}

// An interface already named, MTU'd and up as the NodeENI asks is taken
// over with zero netlink writes, by a first agent and by one restarted
// with its state file lost; status reports it configured.
func TestTakeoverOfConfiguredInterfaceWritesNothing(t *testing.T) {
	w := newWorld(t, "n", 1)
	w.addLink("multus", w.mac(0), 9001)
	l, err := w.nl.LinkByName("multus")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.nl.LinkSetUp(l); err != nil {
		t.Fatal(err)
	}
	name := w.name("configured")
	eni := w.enis[0].ID
	w.createNodeENI(name, func(s *v1alpha1.NodeENISpec) { s.MTU, s.InterfaceName = 9001, "multus" }, w.attachment(0, v1alpha1.AttachmentAttached))

	for _, run := range []string{"first agent", "restarted agent, state file lost"} {
		if err := os.Remove(w.options().StateFile); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		nl := &countingNetlink{netlinkOps: w.nl}
		o := w.options()
		o.netlink = nl
		a := w.start(o, nil)
		w.eventually(run+": reported configured", func() (bool, string) {
			e := w.entries(name)[eni]
			return e.State == v1alpha1.InterfaceConfigured && e.InterfaceName == "multus" && e.MTU == 9001 && e.Up, fmt.Sprintf("%+v", e)
		})
		time.Sleep(500 * time.Millisecond) // passes after the first one write nothing either
		_ = a.Stop()
		if ws := nl.log(); len(ws) != 0 {
			t.Fatalf("%s: %d netlink writes, want 0: %v", run, len(ws), ws)
		}
		if l, ok := w.linkByMAC(w.mac(0)); !ok || l.Name != "multus" || l.MTU != 9001 || !l.Up {
			t.Fatalf("%s: link now %+v", run, l)
		}
	}
}

// A device already bound to vfio-pci (by the ENI Manager's dpdk-devbind,
// which sets no driver_override), with no state file, is taken over with
// zero sysfs and netlink writes; status reports it bound, and the ENI
// Manager's device plugin entry for it is adopted unchanged. The state
// file records it, so releasing it later gives it back to the kernel.
func TestTakeoverOfBoundDPDKDeviceWritesNothing(t *testing.T) {
	w := newWorld(t, "n", 1)
	k := newFakeKernel(t, "ena", "vfio-pci")
	k.addDevice(testPCI, "vfio-pci", "") // bound: no interface, so no link either
	k.defaults[testPCI] = "ena"          // what the kernel picks once the device is let go
	legacy := `{"resourceList":[{"resourcePrefix":"intel.com","resourceName":"sriov_dpdk","selectors":[{"drivers":["vfio-pci"],"pciAddresses":["` + testPCI + `"]}]}]}`
	cfgPath := w.sriovConfig(legacy)
	stampPath := filepath.Join(w.dir, "run", "sriov-reload")
	nl := &countingNetlink{netlinkOps: w.nl}
	o := w.options()
	o.SysfsRoot, o.sysfsWrite, o.netlink = k.root, k.write, nl
	o.SRIOVConfig, o.SRIOVReload = cfgPath, Reload{Mode: ReloadTouch, Path: stampPath}

	name := w.name("bound")
	eni := w.enis[0].ID
	w.createNodeENI(name, func(s *v1alpha1.NodeENISpec) {
		s.EnableDPDK, s.DPDKPCIAddress, s.DPDKResourceName, s.MTU = true, testPCI, "intel.com/sriov_dpdk", 9001
	}, w.attachment(0, v1alpha1.AttachmentAttached))
	a := w.start(o, nil)
	w.eventually("reported bound", func() (bool, string) {
		e := w.entries(name)[eni]
		return e.State == v1alpha1.InterfaceConfigured && e.DPDKBound && e.DPDKDriver == "vfio-pci" && e.DPDKPCIAddress == testPCI &&
			e.DPDKResourceName == "intel.com/sriov_dpdk", fmt.Sprintf("%+v", e)
	})
	time.Sleep(500 * time.Millisecond)
	_ = a.Stop()
	if ws := k.log(); len(ws) != 0 {
		t.Fatalf("%d sysfs writes, want 0: %+v", len(ws), ws)
	}
	if ws := nl.log(); len(ws) != 0 {
		t.Fatalf("%d netlink writes, want 0: %v", len(ws), ws)
	}
	if b, _ := os.ReadFile(cfgPath); string(b) != legacy {
		t.Fatalf("the device plugin config was rewritten:\n%s", b)
	}
	if _, err := os.Stat(stampPath); !os.IsNotExist(err) {
		t.Fatalf("the device plugin was told to restart (stamp %v)", err)
	}
	b, err := os.ReadFile(w.options().StateFile)
	if err != nil || !strings.Contains(string(b), `"boundDriver": "vfio-pci"`) || strings.Contains(string(b), "originalDriver") {
		t.Fatalf("state file (err %v):\n%s", err, b)
	}
	if got := k.driverOf(testPCI); got != "vfio-pci" {
		t.Fatalf("driver now %q", got)
	}

	// Taken over for good: the NodeENI deleted, the device goes to the
	// kernel's default driver (the original is not known) and the adopted
	// entry leaves the config.
	w.deleteNodeENI(name)
	w.start(o, nil)
	w.eventually("released", func() (bool, string) {
		b, _ := os.ReadFile(cfgPath)
		rl := resourceList(t, b)
		return k.driverOf(testPCI) == "ena" && len(rl) == 0, fmt.Sprintf("driver %q, config %v", k.driverOf(testPCI), rl)
	})
}

// The ENI Manager's case-2 sample (SR-IOV with enableDPDK false) applied
// unchanged: the interface keeps its kernel driver and is published as a
// kernel-driver resource of its own PCI device; a dpdkPCIAddress naming
// another device (the node's primary) is refused and nothing is
// published.
func TestSRIOVWithoutDPDKPublishesTheKernelDevice(t *testing.T) {
	w := newWorld(t, "n", 2)
	k := newFakeKernel(t, "ena", "vfio-pci")
	const primaryPCI, eniPCI = "0000:00:05.0", "0000:00:07.0"
	k.addDevice(primaryPCI, "ena", "ens5")
	k.addDevice(eniPCI, "ena", "ens7")
	w.addLink("ens7", w.mac(1), 1500)
	cfgPath := w.sriovConfig("")
	o := w.options()
	o.SysfsRoot, o.sysfsWrite = k.root, k.write
	o.SRIOVConfig = cfgPath

	name := w.name("case2")
	eni := w.enis[1].ID
	w.createNodeENI(name, caseTwoSpec, w.attachment(1, v1alpha1.AttachmentAttached))
	w.start(o, nil)
	published := func() []map[string]any {
		b, _ := os.ReadFile(cfgPath)
		if len(b) == 0 {
			return nil
		}
		return resourceList(t, b)
	}
	w.eventually("published with its kernel driver", func() (bool, string) {
		e := w.entries(name)[eni]
		rl := published()
		ok := e.State == v1alpha1.InterfaceConfigured && !e.DPDKBound && e.DPDKResourceName == "intel.com/sriov_kernel_1" &&
			e.DPDKPCIAddress == eniPCI && e.MTU == 9001 && e.Up &&
			len(rl) == 1 && rl[0]["resourceName"] == "sriov_kernel_1" && rl[0]["resourcePrefix"] == "intel.com" &&
			reflect.DeepEqual(rl[0]["selectors"], map[string]any{"pciAddresses": []any{eniPCI}, "drivers": []any{"ena"}})
		return ok, fmt.Sprintf("entry %+v; config %v", e, rl)
	})
	if ws := k.log(); len(ws) != 0 || k.driverOf(eniPCI) != "ena" {
		t.Fatalf("SR-IOV without DPDK touched sysfs: %+v (driver %q)", ws, k.driverOf(eniPCI))
	}

	// The primary's address instead: refused, and the entry goes.
	w.updateSpec(name, func(s *v1alpha1.NodeENISpec) { s.DPDKPCIAddress = primaryPCI })
	w.eventually("refused, unpublished", func() (bool, string) {
		e := w.entries(name)[eni]
		rl := published()
		ok := e.State == v1alpha1.InterfaceFailed && strings.Contains(e.Message, "not the device of this ENI's interface ens7") &&
			e.DPDKResourceName == "" && len(rl) == 0
		return ok, fmt.Sprintf("entry %+v; config %v", e, rl)
	})
}

// An agent restarted with its state file lost finds the device it bound
// (no dpdkPCIAddress in the spec, the interface gone with the bind)
// through its own status entry, checks that sysfs still shows it bound
// with no interface, and takes it over with zero sysfs writes.
func TestDPDKStateFileLostFoundThroughOwnReport(t *testing.T) {
	w := newWorld(t, "n", 1)
	k := ens6Kernel(w)
	o := w.options()
	o.SysfsRoot, o.sysfsWrite = k.root, k.write
	name := w.name("lost")
	eni := w.enis[0].ID
	w.createNodeENI(name, func(s *v1alpha1.NodeENISpec) { s.EnableDPDK = true }, w.attachment(0, v1alpha1.AttachmentAttached))
	a := w.start(o, nil)
	bound := func() (bool, string) {
		e := w.entries(name)[eni]
		return e.State == v1alpha1.InterfaceConfigured && e.DPDKBound && e.DPDKPCIAddress == testPCI && k.driverOf(testPCI) == "vfio-pci",
			fmt.Sprintf("entry %+v, driver %q", e, k.driverOf(testPCI))
	}
	w.eventually("bound", bound)
	_ = a.Stop()
	if err := os.Remove(o.StateFile); err != nil {
		t.Fatal(err)
	}
	writes := len(k.log())
	nl := &countingNetlink{netlinkOps: w.nl}
	o.netlink = nl
	a = w.start(o, nil)
	w.eventually("taken over again, recorded", func() (bool, string) {
		b, _ := os.ReadFile(o.StateFile)
		return strings.Contains(string(b), `"boundDriver": "vfio-pci"`) && strings.Contains(string(b), testPCI), string(b)
	})
	time.Sleep(500 * time.Millisecond)
	_ = a.Stop()
	if ws := k.log()[writes:]; len(ws) != 0 {
		t.Fatalf("%d sysfs writes after the state file was lost, want 0: %+v", len(ws), ws)
	}
	if ws := nl.log(); len(ws) != 0 {
		t.Fatalf("%d netlink writes, want 0: %v", len(ws), ws)
	}
	if ok, seen := bound(); !ok {
		t.Fatalf("after the takeover: %s", seen)
	}
}

// The device the agent reported bound (its ENINode's status) is
// remembered in the want; unbound entries and malformed addresses are not.
func TestDesiredReportedPCI(t *testing.T) {
	en := eniNode("n1",
		att("d", "n1", "eni-1", "02:00:00:00:00:01", 1, v1alpha1.AttachmentAttached),
		att("d", "n1", "eni-2", "02:00:00:00:00:02", 2, v1alpha1.AttachmentAttached),
		att("d", "n1", "eni-3", "02:00:00:00:00:03", 3, v1alpha1.AttachmentAttached))
	en.Status.Interfaces = []v1alpha1.InterfaceStatus{
		{ENIID: "eni-1", DPDKBound: true, DPDKPCIAddress: "0000:00:06.0"},
		{ENIID: "eni-2", DPDKPCIAddress: "0000:00:07.0"},
		{ENIID: "eni-3", DPDKBound: true, DPDKPCIAddress: "../../x"},
	}
	got := map[string]string{}
	for _, w := range desired(en.Name, en, []v1alpha1.NodeENI{nodeENI("d", v1alpha1.NodeENISpec{EnableDPDK: true})}, "") {
		got[w.ENIID] = w.ReportedPCI
	}
	if want := map[string]string{"eni-1": "0000:00:06.0", "eni-2": "", "eni-3": ""}; !reflect.DeepEqual(got, want) {
		t.Fatalf("reported %v, want %v", got, want)
	}
}
