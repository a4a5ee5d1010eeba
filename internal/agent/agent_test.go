package agent

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// The agent finds each interface by MAC address in the node's namespace
// and sets its name, MTU and up state; a link with a foreign MAC, the
// loopback and the primary interface (default route) are left alone.
func TestConfiguresInterfacesByMAC(t *testing.T) {
	w := newWorld(t, "n", 3)
	w.addLink("ens5", w.mac(0), 1500)
	w.addVeth("ens6", "peer6", w.mac(1))
	w.addLink("foreign0", "02:ff:00:00:00:01", 1400)
	// ENI 2's MAC is on a link that carries the default route: the
	// primary interface, as a wrong attachment would make it look.
	w.addLink("eth0", w.mac(2), 1500)
	eth0, _ := w.linkByName("eth0")
	l, _ := w.nl.LinkByIndex(eth0.Index)
	if err := w.nl.LinkSetUp(l); err != nil {
		t.Fatal(err)
	}
	if err := w.nl.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(10, 99, 0, 2), Mask: net.CIDRMask(24, 32)}}); err != nil {
		t.Fatal(err)
	}
	if err := w.nl.RouteAdd(&netlink.Route{LinkIndex: eth0.Index, Gw: net.IPv4(10, 99, 0, 1)}); err != nil {
		t.Fatal(err)
	}

	data, prim := w.name("data"), w.name("prim")
	w.createNodeENI(data, func(s *v1alpha1.NodeENISpec) { s.MTU, s.InterfaceName = 9001, "data" },
		w.attachment(0, v1alpha1.AttachmentAttached), w.attachment(1, v1alpha1.AttachmentAttached))
	w.createNodeENI(prim, func(s *v1alpha1.NodeENISpec) { s.MTU = 9000; s.DeviceIndex = 3 }, w.attachment(2, v1alpha1.AttachmentAttached))
	a := w.start(w.options(), nil)

	w.eventually("both ENIs reported Configured", func() (bool, string) {
		es := w.entries(data)
		return len(es) == 2 && es[w.enis[0].ID].State == v1alpha1.InterfaceConfigured && es[w.enis[1].ID].State == v1alpha1.InterfaceConfigured, fmt.Sprintf("%+v", es)
	})
	for i, name := range []string{"data", "data1"} {
		l, ok := w.linkByMAC(w.mac(i))
		if !ok || l.Name != name || l.MTU != 9001 || !l.Up {
			t.Errorf("ENI %d's link: %+v; want %s, MTU 9001, up", i, l, name)
		}
		e := w.entries(data)[w.enis[i].ID]
		if e.InterfaceName != name || e.MTU != 9001 || !e.Up || e.LastUpdated.IsZero() {
			t.Errorf("ENI %d's status: %+v", i, e)
		}
	}
	w.eventually("the primary-looking interface reported Failed", func() (bool, string) {
		e := w.entries(prim)[w.enis[2].ID]
		return e.State == v1alpha1.InterfaceFailed && strings.Contains(e.Message, "default route"), fmt.Sprintf("%+v", e)
	})
	if l, _ := w.linkByName("eth0"); l.MTU != 1500 {
		t.Errorf("the primary interface was changed: %+v", l)
	}
	if l, _ := w.linkByName("foreign0"); l.MTU != 1400 || l.Up {
		t.Errorf("a link with a foreign MAC was touched: %+v", l)
	}
	if l, _ := w.linkByName("lo"); l.Up {
		t.Errorf("the loopback was touched: %+v", l)
	}
	if p, _ := w.linkByName("peer6"); p.Up || p.MTU != 1500 || p.Name == "" {
		t.Errorf("the veth peer (another MAC) was touched: %+v", p)
	}
	if g := interfacesGauge(t, a, v1alpha1.InterfaceConfigured); g != 2 {
		t.Errorf("eni_agent_interfaces{state=Configured} = %v", g)
	}
	// The entries are owned by the node's field manager (server-side
	// apply on the status subresource of the node's ENINode).
	found := false
	for _, mf := range w.eniNode().ManagedFields {
		if mf.Manager == FieldManager(w.node) && mf.Operation == "Apply" && mf.Subresource == "status" {
			found = true
		}
	}
	if !found {
		t.Errorf("no Apply of the status by %s in managedFields", FieldManager(w.node))
	}
}

// A hot-plugged interface is configured when the kernel announces it:
// the retry interval is a minute here, so only the link event can do it.
func TestLateInterfaceIsConfiguredWhenItAppears(t *testing.T) {
	w := newWorld(t, "n", 1)
	name := w.name("late")
	w.createNodeENI(name, func(s *v1alpha1.NodeENISpec) { s.MTU = 9001 }, w.attachment(0, v1alpha1.AttachmentAttached))
	o := w.options()
	o.RetryBase, o.RetryMax = time.Minute, time.Minute
	w.start(o, nil)
	w.eventually("reported Pending", func() (bool, string) {
		e := w.entries(name)[w.enis[0].ID]
		return e.State == v1alpha1.InterfacePending && strings.Contains(e.Message, w.mac(0)), fmt.Sprintf("%+v", e)
	})
	// Unrelated link churn (a pod's veth) wakes nothing up and breaks nothing.
	w.addVeth("vethpod", "vethpod-peer", "02:ee:00:00:00:01")
	time.Sleep(200 * time.Millisecond)
	w.addLink("ens7", w.mac(0), 1500)
	start := time.Now()
	w.eventually("configured once it appeared", func() (bool, string) {
		l, ok := w.linkByMAC(w.mac(0))
		e := w.entries(name)[w.enis[0].ID]
		return ok && l.MTU == 9001 && l.Up && e.State == v1alpha1.InterfaceConfigured, fmt.Sprintf("%+v %+v", l, e)
	})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s: not event-driven", d)
	}
	// Hot-unplugged: reported Pending again, at once.
	w.deleteLink("ens7")
	w.eventually("reported Pending after the link went", func() (bool, string) {
		e := w.entries(name)[w.enis[0].ID]
		return e.State == v1alpha1.InterfacePending, fmt.Sprintf("%+v", e)
	})
}

// Removal releases the interface (kernel name back, entry pruned);
// re-adding configures it again; a restarted agent picks up where the
// last one left off, from its state file.
func TestRemovalReAddAndRestart(t *testing.T) {
	w := newWorld(t, "n", 1)
	w.addLink("ens5", w.mac(0), 1500)
	name := w.name("multus")
	w.createNodeENI(name, func(s *v1alpha1.NodeENISpec) { s.MTU, s.InterfaceName = 9001, "multus" }, w.attachment(0, v1alpha1.AttachmentAttached))
	a := w.start(w.options(), nil)
	configured := func(mtu int) func() (bool, string) {
		return func() (bool, string) {
			l, ok := w.linkByMAC(w.mac(0))
			e := w.entries(name)[w.enis[0].ID]
			return ok && l.Name == "multus" && l.MTU == mtu && l.Up && e.State == v1alpha1.InterfaceConfigured && e.MTU == int32(mtu),
				fmt.Sprintf("%+v %+v", l, e)
		}
	}
	w.eventually("configured", configured(9001))
	released := func() (bool, string) {
		l, _ := w.linkByMAC(w.mac(0))
		return l.Name == "ens5" && len(w.entries(name)) == 0, fmt.Sprintf("%+v %+v", l, w.entries(name))
	}

	// The operator starts detaching the ENI.
	w.setAttachments(name, w.attachment(0, v1alpha1.AttachmentDetaching))
	w.eventually("released: kernel name back, entry pruned", released)
	// Attached again (say, the node matched the selector again).
	w.setAttachments(name, w.attachment(0, v1alpha1.AttachmentAttached))
	w.eventually("configured again", configured(9001))

	// interfaceName removed from the spec: the kernel name comes back;
	// set again: renamed again.
	w.updateSpec(name, func(s *v1alpha1.NodeENISpec) { s.InterfaceName = "" })
	w.eventually("kernel name back once interfaceName is gone", func() (bool, string) {
		l, _ := w.linkByMAC(w.mac(0))
		e := w.entries(name)[w.enis[0].ID]
		return l.Name == "ens5" && l.Up && e.InterfaceName == "ens5" && e.State == v1alpha1.InterfaceConfigured, fmt.Sprintf("%+v %+v", l, e)
	})
	w.updateSpec(name, func(s *v1alpha1.NodeENISpec) { s.InterfaceName = "multus" })
	w.eventually("renamed again", configured(9001))

	// Restart: changes made while the agent is down are picked up.
	_ = a.Stop()
	w.updateSpec(name, func(s *v1alpha1.NodeENISpec) { s.MTU = 8000 })
	time.Sleep(300 * time.Millisecond)
	if l, _ := w.linkByMAC(w.mac(0)); l.MTU != 9001 {
		t.Fatalf("changed with no agent running: %+v", l)
	}
	b, err := os.ReadFile(filepath.Join(w.dir, "state.json"))
	if err != nil || !strings.Contains(string(b), `"originalName": "ens5"`) {
		t.Fatalf("the state file does not remember the kernel name: %v\n%s", err, b)
	}
	w.start(w.options(), nil)
	w.eventually("the new MTU applied by the restarted agent", configured(8000))
	// The restarted agent knows the kernel name from the state file.
	w.deleteNodeENI(name)
	w.eventually("renamed back after the NodeENI was deleted", func() (bool, string) {
		l, _ := w.linkByMAC(w.mac(0))
		return l.Name == "ens5", fmt.Sprintf("%+v", l)
	})
	w.eventually("state file emptied", func() (bool, string) {
		b, _ := os.ReadFile(filepath.Join(w.dir, "state.json"))
		return !strings.Contains(string(b), w.enis[0].ID), string(b)
	})
}

// The operator deletes a node's ENINode once it holds no ENI: what the
// agent configured is released.
func TestENINodeDeletedReleasesInterfaces(t *testing.T) {
	w := newWorld(t, "n", 1)
	w.addLink("ens5", w.mac(0), 1500)
	name := w.name("multus")
	w.createNodeENI(name, func(s *v1alpha1.NodeENISpec) { s.InterfaceName = "multus" }, w.attachment(0, v1alpha1.AttachmentAttached))
	w.start(w.options(), nil)
	w.eventually("configured", func() (bool, string) {
		l, _ := w.linkByMAC(w.mac(0))
		return l.Name == "multus" && w.entries(name)[w.enis[0].ID].State == v1alpha1.InterfaceConfigured, fmt.Sprintf("%+v", l)
	})
	if err := w.k8s.Delete(context.Background(), w.eniNode()); err != nil {
		t.Fatal(err)
	}
	w.eventually("renamed back once the ENINode is gone", func() (bool, string) {
		l, _ := w.linkByMAC(w.mac(0))
		b, _ := os.ReadFile(filepath.Join(w.dir, "state.json"))
		return l.Name == "ens5" && !strings.Contains(string(b), w.enis[0].ID), fmt.Sprintf("%+v %s", l, b)
	})
}

// During an upgrade the agent may start before the operator has written
// its node's ENINode: the entries an operator of an earlier version
// wrote to NodeENI status.attachments keep the interface configured, not
// released, until the ENINode takes over.
func TestEarlierOperatorsEntriesKeepInterfacesConfigured(t *testing.T) {
	w := newWorld(t, "up", 1)
	w.addLink("ens5", w.mac(0), 1500)
	name := w.name("multus")
	w.createNodeENI(name, func(s *v1alpha1.NodeENISpec) { s.InterfaceName = "multus" })
	ne := &v1alpha1.NodeENI{}
	if err := w.k8s.Get(context.Background(), client.ObjectKey{Name: name}, ne); err != nil {
		t.Fatal(err)
	}
	earlier := w.attachment(0, v1alpha1.AttachmentAttached)
	earlier.NodeENI = ""
	ne.Status.Attachments = []v1alpha1.ENIAttachment{earlier}
	if err := w.k8s.Status().Update(context.Background(), ne); err != nil {
		t.Fatal(err)
	}
	w.start(w.options(), nil)
	w.eventually("configured from the earlier operator's entry", func() (bool, string) {
		l, _ := w.linkByMAC(w.mac(0))
		return l.Name == "multus", fmt.Sprintf("%+v", l)
	})
	// The operator of this version writes the ENINode and drops the
	// earlier entry: the interface stays configured, now reported.
	w.setAttachments(name, w.attachment(0, v1alpha1.AttachmentAttached))
	if err := w.k8s.Get(context.Background(), client.ObjectKey{Name: name}, ne); err != nil {
		t.Fatal(err)
	}
	ne.Status.Attachments = nil
	if err := w.k8s.Status().Update(context.Background(), ne); err != nil {
		t.Fatal(err)
	}
	w.eventually("reported in the ENINode", func() (bool, string) {
		l, _ := w.linkByMAC(w.mac(0))
		return l.Name == "multus" && w.entries(name)[w.enis[0].ID].State == v1alpha1.InterfaceConfigured, fmt.Sprintf("%+v", l)
	})
}

// Agents of two nodes serving one NodeENI each report into their own
// ENINode: one node's pruning leaves the other's report alone, and the
// operator's writes of the spec leave the report alone.
func TestNodesReportIntoTheirOwnENINodes(t *testing.T) {
	a, b := newWorld(t, "a", 1), newWorld(t, "b", 1)
	a.addLink("ens5", a.mac(0), 1500)
	b.addLink("ens5", b.mac(0), 1500)
	name := a.name("shared")
	a.createNodeENI(name, func(s *v1alpha1.NodeENISpec) { s.MTU = 9001 },
		a.attachment(0, v1alpha1.AttachmentAttached), b.attachment(0, v1alpha1.AttachmentAttached))
	a.start(a.options(), nil)
	b.start(b.options(), nil)
	for _, w := range []*world{a, b} {
		w.eventually("the node reports its ENI", func() (bool, string) {
			st := w.eniNode().Status.Interfaces
			return len(st) == 1 && st[0].ENIID == w.enis[0].ID && st[0].State == v1alpha1.InterfaceConfigured && st[0].MTU == 9001, fmt.Sprintf("%+v", st)
		})
		managers := map[string]bool{}
		for _, mf := range w.eniNode().ManagedFields {
			managers[mf.Manager] = true
		}
		other := map[*world]*world{a: b, b: a}[w]
		if !managers[FieldManager(w.node)] || managers[FieldManager(other.node)] {
			t.Fatalf("ENINode %s's managers %v; want its own agent's, not the other's", w.node, managers)
		}
	}
	before := a.entries(name)[a.enis[0].ID]
	// Node b's ENI goes away: only b's entry goes.
	a.setAttachments(name, a.attachment(0, v1alpha1.AttachmentAttached))
	b.eventually("b's entry pruned", func() (bool, string) {
		st := b.eniNode().Status.Interfaces
		return len(st) == 0, fmt.Sprintf("%+v", st)
	})
	if after := a.entries(name)[a.enis[0].ID]; !after.LastUpdated.Equal(&before.LastUpdated) {
		t.Errorf("a's entry was rewritten: %v -> %v", before.LastUpdated, after.LastUpdated)
	}
	// The operator's own write of the spec (another NodeENI's ENI,
	// still being created) leaves the agent's report alone.
	extra := a.attachment(0, v1alpha1.AttachmentCreated)
	extra.ENIID, extra.MACAddress = "eni-0aaaaaaaaaaaaaaaa", ""
	a.setAttachments(a.name("other"), extra)
	time.Sleep(300 * time.Millisecond)
	if st := a.eniNode().Status.Interfaces; len(st) != 1 || !st[0].LastUpdated.Equal(&before.LastUpdated) {
		t.Fatalf("a's report after the operator's spec write: %+v", st)
	}
}
