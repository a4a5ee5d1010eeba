package agent

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// The node's address in the primary tests, and its gateway.
const (
	primaryIP  = "10.0.0.10"
	primaryMAC = "02:aa:00:00:00:01"
)

// primary makes the node's primary interface in the world's namespace:
// a link called name with primaryMAC, up, MTU 1500. The address and the
// default route are each test's.
func (w *world) primary(name string) netlink.Link {
	w.t.Helper()
	w.addLink(name, primaryMAC, 1500)
	l, err := w.nl.LinkByName(name)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.nl.LinkSetUp(l); err != nil {
		w.t.Fatal(err)
	}
	return l
}

// address gives l the node's address and, in table (0: main), a default
// route through it.
func (w *world) address(l netlink.Link, table int) {
	w.t.Helper()
	addr, err := netlink.ParseAddr(primaryIP + "/24")
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.nl.AddrAdd(l, addr); err != nil {
		w.t.Fatalf("adding %s to %s: %v", addr, l.Attrs().Name, err)
	}
	r := &netlink.Route{LinkIndex: l.Attrs().Index, Gw: net.ParseIP("10.0.0.1"), Table: table}
	if err := w.nl.RouteAdd(r); err != nil {
		w.t.Fatalf("adding the default route through %s: %v", l.Attrs().Name, err)
	}
}

// A NodeENI's attachment whose macAddress was rewritten (by anyone who
// may patch NodeENI status) to the MAC address of an interface that is
// not an ENI of the operator: the node's primary interface, found by its
// default route, by the node's address (default route in another table),
// or as the port of a bridge that holds the node's address; or a pod's
// veth. The agent reports the entry Failed, saying why, and makes no
// netlink write at all: the interface keeps its name, MTU and up state.
func TestTamperedMACTouchesNothing(t *testing.T) {
	cases := []struct {
		name  string
		setup func(w *world) string // makes the interface; returns its name ("": not on this kernel)
		kinds []string              // nil: the world's
		why   string
	}{
		{"primary by its default route", func(w *world) string {
			w.address(w.primary("eth0"), 0)
			return "eth0"
		}, nil, "default route"},
		{"primary by the node's address, default route in another table", func(w *world) string {
			w.address(w.primary("eth0"), 100)
			return "eth0"
		}, nil, "node's address " + primaryIP},
		{"primary as the port of a bridge holding the node's address", func(w *world) string {
			eth := w.primary("eth0")
			br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}
			if err := w.nl.LinkAdd(br); err != nil {
				t.Logf("SKIPPED the bridge case: no bridge support: %v", err)
				return ""
			}
			if err := w.nl.LinkSetMaster(eth, br); err != nil {
				t.Fatal(err)
			}
			if err := w.nl.LinkSetUp(br); err != nil {
				t.Fatal(err)
			}
			w.address(br, 0)
			return "eth0"
		}, nil, "port of br0"},
		{"a pod's veth", func(w *world) string {
			w.addVeth("veth1a2b", "veth1a2bp", primaryMAC)
			return "veth1a2b"
		}, []string{"device", "dummy"}, "veth link"},
	}
	for i, c := range cases {
		func() {
			w := newWorld(t, fmt.Sprintf("p%d", i), 1)
			iface := c.setup(w)
			if iface == "" {
				return
			}
			before, _ := w.linkByName(iface)
			name := w.name(fmt.Sprintf("p%d", i))
			eni := w.enis[0].ID
			att := w.attachment(0, v1alpha1.AttachmentAttached)
			att.MACAddress = primaryMAC
			w.createNodeENI(name, func(s *v1alpha1.NodeENISpec) { s.MTU, s.InterfaceName = 9001, "multus" }, att)

			nl := &countingNetlink{netlinkOps: w.nl}
			o := w.options()
			o.netlink, o.NodeIPs = nl, []string{primaryIP}
			if c.kinds != nil {
				o.linkKinds = c.kinds
			}
			a := w.start(o, nil)
			w.eventually(c.name+": reported Failed, saying why", func() (bool, string) {
				e := w.entries(name)[eni]
				return e.State == v1alpha1.InterfaceFailed && strings.Contains(e.Message, c.why) &&
					strings.Contains(e.Message, "macAddress"), fmt.Sprintf("%+v", e)
			})
			time.Sleep(500 * time.Millisecond) // the retries write nothing either
			_ = a.Stop()
			if ws := nl.log(); len(ws) != 0 {
				t.Fatalf("%s: %d netlink writes, want 0: %v", c.name, len(ws), ws)
			}
			after, ok := w.linkByName(iface)
			if !ok || after.MTU != before.MTU || after.Up != before.Up {
				t.Fatalf("%s: %s changed: %+v, was %+v", c.name, iface, after, before)
			}
		}()
	}
}

// The guard's rule, one case per kind of interface an attachment's MAC
// address may name.
func TestLinkRefusal(t *testing.T) {
	g := newGuard([]string{" 10.0.0.10 ", "2001:db8::0a", "not-an-ip"}, nil)
	eni := link{Index: 3, Name: "ens6", Type: "device", Addrs: []string{"10.0.1.20"}}
	bridge := link{Index: 4, Name: "br0", Type: "bridge", DefaultRoute: true}
	bond := link{Index: 5, Name: "bond0", Type: "bond"}
	cases := []struct {
		name string
		l    link
		want string // "" passes
	}{
		{"an ENI's device, with an address of its own", eni, ""},
		{"default route", link{Index: 2, Name: "eth0", Type: "device", DefaultRoute: true}, "default route"},
		{"the node's IPv4 address, no default route", link{Index: 2, Name: "eth0", Type: "device", Addrs: []string{"10.0.0.10"}}, "node's address 10.0.0.10"},
		{"the node's IPv6 address, another spelling", link{Index: 2, Name: "eth0", Type: "device", Addrs: []string{"2001:db8::a"}}, "node's address 2001:db8::a"},
		{"port of the bridge with the default route", link{Index: 2, Name: "eth0", Type: "device", Master: 4}, "port of br0 (the master is the node's primary network)"},
		{"port of another bond", link{Index: 2, Name: "eth1", Type: "device", Master: 5}, "port of bond0 (its master configures it)"},
		{"port of a master not listed", link{Index: 2, Name: "eth1", Type: "device", Master: 9}, "port of index 9"},
		{"loopback", link{Index: 1, Name: "lo", Type: "device", Loopback: true}, "loopback link"},
		{"veth", link{Index: 7, Name: "veth1", Type: "veth"}, "veth link"},
		{"dummy", link{Index: 7, Name: "dummy0", Type: "dummy"}, "dummy link"},
		{"tun", link{Index: 7, Name: "tun0", Type: "tuntap"}, "tuntap link"},
	}
	for _, c := range cases {
		got := g.refusal(c.l, []link{eni, bridge, bond, c.l})
		if (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: refusal %q; want %q", c.name, got, c.want)
		}
	}
	if got := newGuard(nil, []string{"dummy"}).refusal(link{Name: "d", Type: "dummy"}, nil); got != "" {
		t.Errorf("kinds given: a dummy refused: %q", got)
	}
}

func TestValidateNodeIPs(t *testing.T) {
	o := Options{NodeName: "n", SysfsRoot: "/sys", DefaultDPDKDriver: "vfio-pci", StateFile: DefaultStateFile, RetryMax: time.Minute,
		NodeIPs: []string{"10.0.0.10", "fd00::1"}}
	if err := o.Validate(); err != nil {
		t.Fatalf("valid addresses: %v", err)
	}
	o.NodeIPs = append(o.NodeIPs, "10.0.0.300")
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "node-ip") || !strings.Contains(err.Error(), "10.0.0.300") {
		t.Fatalf("a bad address: %v", err)
	}
}
