package podaddrs

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

const macA, macB = "02:00:00:00:00:0a", "02:00:00:00:00:0b"

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func held(ss ...string) map[netip.Addr]bool {
	m := map[netip.Addr]bool{}
	for _, a := range addrs(ss...) {
		m[a] = true
	}
	return m
}

// eniA registers (NodeENI multus, subnet 10.0.1.0/24 and an IPv6 /64),
// eniB does not (NodeENI storage).
func interfaces(heldA ...string) []iface {
	return []iface{
		{ENI: "eni-a", NodeENI: "multus", MAC: macA, Registers: true, Subnet4: netip.MustParsePrefix("10.0.1.0/24"),
			Subnet6: netip.MustParsePrefix("2600:1f18::/64"), Primary: netip.MustParseAddr("10.0.1.4"), Held: held(heldA...), Free4: 3, Free6: 3},
		{ENI: "eni-b", NodeENI: "storage", MAC: macB, Subnet4: netip.MustParsePrefix("10.0.2.0/24"), Held: held()},
	}
}

const macC = "02:00:00:00:00:0c"

// twinInterfaces are interfaces with eni-c, a second registering ENI of
// eni-a's subnet (NodeENI multus-c).
func twinInterfaces() []iface {
	in := interfaces()
	twin := in[0]
	twin.ENI, twin.NodeENI, twin.MAC, twin.Primary, twin.Held = "eni-c", "multus-c", macC, netip.MustParseAddr("10.0.1.5"), held()
	return append(in, twin)
}

// claimAt is claim by a pod created at second sec.
func claimAt(pod, mac string, sec int, ss ...string) podClaim {
	c := claim(pod, mac, ss...)
	c.Created = time.Unix(int64(sec), 0)
	return c
}

// settle decides as a pass does: when the decision asks who holds the
// addresses it would record, it decides again with EC2's answer
// (holders, none by default), unless EC2 does not answer.
func settle(in input, holders map[string]string, answers bool) (decision, []string) {
	d := decide(in)
	if len(d.Verify) == 0 {
		return d, nil
	}
	var asked []string
	in.Verified = map[netip.Addr]string{}
	for _, a := range d.Verify {
		asked = append(asked, a.String())
		if answers {
			in.Verified[a] = holders[a.String()]
		}
	}
	return decide(in), asked
}

func claim(pod, mac string, ss ...string) podClaim {
	return podClaim{Pod: pod, Networks: []attachedNetwork{{Name: "default/multus", Interface: "net1", MAC: mac, Addresses: addrs(ss...)}}}
}

func rec(addr, eni, pod string) v1alpha1.PodAddress {
	return v1alpha1.PodAddress{Address: addr, ENIID: eni, Pod: pod}
}

func TestDecide(t *testing.T) {
	nobody := func(netip.Addr) string { return "" }
	cases := []struct {
		name     string
		in       input
		assign   string // eni:addr,addr;...
		unassign string
		record   []v1alpha1.PodAddress
		stale    []string
		refused  []string // pod:reason
		taken    []string // addresses waited for
		reg      int      // registered on multus
		// ec2 are the holders EC2 shows when asked (none by default);
		// unanswered leaves every question unanswered.
		ec2        map[string]string
		unanswered bool
		verified   []string // addresses EC2 was asked about
		refusedOn  []string // the NodeENIs of the refusals, when checked
		backoff    []string // claims refused on EC2's word: pod:addr
	}{
		{name: "a new address is recorded and assigned on the ENI of its MAC",
			in:     input{Interfaces: interfaces(), Claims: []podClaim{claim("ns/p1", macA, "10.0.1.20", "2600:1f18::20")}},
			assign: "eni-a:10.0.1.20,2600:1f18::20", record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/p1"), rec("2600:1f18::20", "eni-a", "ns/p1")},
			verified: []string{"10.0.1.20", "2600:1f18::20"}, reg: 2},
		{name: "an address the ENI already holds is registered but not recorded: it stays its assigner's",
			in:  input{Interfaces: interfaces("10.0.1.20"), Claims: []podClaim{claim("ns/p1", macA, "10.0.1.20")}},
			reg: 1},
		{name: "in place and recorded: nothing to do",
			in:     input{Interfaces: interfaces("10.0.1.20"), Claims: []podClaim{claim("ns/p1", macA, "10.0.1.20")}, Record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/p1")}},
			record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/p1")}, reg: 1},
		{name: "recorded but not held (a crash before the call, or someone unassigned it): assigned again",
			in:     input{Interfaces: interfaces(), Claims: []podClaim{claim("ns/p1", macA, "10.0.1.20")}, Record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/p1")}},
			assign: "eni-a:10.0.1.20", record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/p1")}, reg: 1},
		{name: "the pod is gone: its recorded addresses are unassigned, the one someone else assigned is not",
			in: input{Interfaces: interfaces("10.0.1.20", "10.0.1.21", "10.0.1.99"),
				Record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/p1"), rec("10.0.1.21", "eni-a", "ns/p1")}},
			unassign: "eni-a:10.0.1.20,10.0.1.21", record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/p1"), rec("10.0.1.21", "eni-a", "ns/p1")}},
		{name: "recorded, unclaimed and no longer held, or on an ENI the node no longer has: dropped without a call",
			in:     input{Interfaces: interfaces(), Record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/p1"), rec("10.0.9.9", "eni-gone", "ns/p2")}},
			record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/p1"), rec("10.0.9.9", "eni-gone", "ns/p2")}, stale: []string{"10.0.1.20", "10.0.9.9"}},
		{name: "an ENI EC2 does not show yet keeps its record untouched",
			in:     input{Interfaces: interfaces(), Unknown: map[string]bool{"eni-new": true}, Record: []v1alpha1.PodAddress{rec("10.0.3.3", "eni-new", "ns/p1")}},
			record: []v1alpha1.PodAddress{rec("10.0.3.3", "eni-new", "ns/p1")}},
		{name: "outside the ENI's subnet, or IPv6 where the subnet has none: refused",
			in:      input{Interfaces: interfaces(), Claims: []podClaim{claim("ns/p1", macA, "10.0.2.20"), claim("ns/p2", macA, "2600:1f19::1")}},
			refused: []string{"ns/p1:" + ReasonNotInSubnet, "ns/p2:" + ReasonNotInSubnet}},
		{name: "held by another ENI: refused before any call, so it cannot fail the ENI's batch",
			in: input{Interfaces: interfaces(), Claims: []podClaim{claim("ns/p1", macA, "10.0.1.20"), claim("ns/p2", macA, "10.0.1.21")},
				HeldBy: func(a netip.Addr) string { return map[string]string{"10.0.1.20": "eni-other"}[a.String()] }},
			assign: "eni-a:10.0.1.21", record: []v1alpha1.PodAddress{rec("10.0.1.21", "eni-a", "ns/p2")}, refused: []string{"ns/p1:" + ReasonAddressTaken}, taken: []string{"10.0.1.20"},
			verified: []string{"10.0.1.21"}, reg: 1},
		{name: "beyond the instance type's addresses per interface: refused, the first ones assigned",
			in: input{Interfaces: interfaces("10.0.1.50", "10.0.1.51"), Claims: []podClaim{claim("ns/p1", macA, "10.0.1.20"), claim("ns/p2", macA, "10.0.1.21"),
				claim("ns/p3", macA, "10.0.1.22"), claim("ns/p4", macA, "10.0.1.23")}},
			assign: "eni-a:10.0.1.20,10.0.1.21,10.0.1.22", record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/p1"), rec("10.0.1.21", "eni-a", "ns/p2"), rec("10.0.1.22", "eni-a", "ns/p3")},
			refused: []string{"ns/p4:" + ReasonAddressLimit}, verified: []string{"10.0.1.20", "10.0.1.21", "10.0.1.22"}, reg: 3},
		{name: "the MAC of an ENI whose NodeENI does not register, an unknown MAC, the ENI's primary address: nothing",
			in: input{Interfaces: interfaces(), Claims: []podClaim{claim("ns/p1", macB, "10.0.2.20"), claim("ns/p2", "02:00:00:00:00:ff", "10.0.1.30"),
				claim("ns/p3", macA, "10.0.1.4")}}},
		{name: "registration turned off: the recorded addresses are unassigned",
			in: func() input {
				in := input{Interfaces: interfaces("10.0.1.20"), Claims: []podClaim{claim("ns/p1", macA, "10.0.1.20")}, Record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/p1")}}
				in.Interfaces[0].Registers = false
				return in
			}(),
			unassign: "eni-a:10.0.1.20", record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/p1")}},
		{name: "two ENIs of one subnet on the node: each pod's address on the ENI of its MAC, never by subnet",
			in: func() input {
				in := input{Interfaces: interfaces(), Claims: []podClaim{claim("ns/p1", macA, "10.0.1.20"), claim("ns/p2", "02:00:00:00:00:0c", "10.0.1.21")}}
				twin := in.Interfaces[0]
				twin.ENI, twin.MAC, twin.Held = "eni-c", "02:00:00:00:00:0c", held()
				in.Interfaces = append(in.Interfaces, twin)
				return in
			}(),
			assign: "eni-a:10.0.1.20;eni-c:10.0.1.21", record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/p1"), rec("10.0.1.21", "eni-c", "ns/p2")},
			verified: []string{"10.0.1.20", "10.0.1.21"}, reg: 2},
		{name: "two new pods claiming one address: the older one's, the other refused",
			in:     input{Interfaces: interfaces(), Claims: []podClaim{claimAt("ns/a-new", macA, 2, "10.0.1.20"), claimAt("ns/z-old", macA, 1, "10.0.1.20")}},
			assign: "eni-a:10.0.1.20", record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/z-old")}, refused: []string{"ns/a-new:" + ReasonAddressTaken},
			verified: []string{"10.0.1.20"}, reg: 1},
		{name: "a pod claiming a living pod's address on the node's other ENI of the subnet: refused on both NodeENIs, nothing moves",
			in: func() input {
				in := input{Interfaces: twinInterfaces(), Claims: []podClaim{claimAt("ns/a-thief", macC, 2, "10.0.1.20"), claimAt("ns/holder", macA, 1, "10.0.1.20")},
					Record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/holder")}}
				in.Interfaces[0].Held = held("10.0.1.20")
				return in
			}(),
			record:  []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/holder")},
			refused: []string{"ns/a-thief:" + ReasonAddressTaken, "ns/a-thief:" + ReasonAddressTaken}, refusedOn: []string{"multus-c", "multus"}, reg: 1},
		{name: "a pod claiming a living pod's address on the same ENI, created first: refused",
			in: input{Interfaces: interfaces("10.0.1.20"), Claims: []podClaim{claimAt("ns/a-thief", macA, 1, "10.0.1.20"), claimAt("ns/holder", macA, 2, "10.0.1.20")},
				Record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/holder")}},
			record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/holder")}, refused: []string{"ns/a-thief:" + ReasonAddressTaken}, reg: 1},
		{name: "the holder gone, the pod an IPAM handed its address to on the same ENI holds it: no call",
			in: input{Interfaces: interfaces("10.0.1.20"), Claims: []podClaim{claim("ns/next", macA, "10.0.1.20")},
				Record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/gone")}},
			record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/next")}, reg: 1},
		{name: "the holder gone, claimed on the node's other ENI of the subnet: unassigned where it was, assigned next pass",
			in: func() input {
				in := input{Interfaces: twinInterfaces(), Claims: []podClaim{claim("ns/next", macC, "10.0.1.20")}, Record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/gone")}}
				in.Interfaces[0].Held = held("10.0.1.20")
				return in
			}(),
			unassign: "eni-a:10.0.1.20", record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/gone")}},
		{name: "EC2 shows the ENI holding it already (another tool, since the inventory): registered, never recorded",
			in:  input{Interfaces: interfaces(), Claims: []podClaim{claim("ns/p1", macA, "10.0.1.20")}},
			ec2: map[string]string{"10.0.1.20": "eni-a"}, verified: []string{"10.0.1.20"}, reg: 1},
		{name: "EC2 shows an ENI outside the inventory holding it: refused, waited for, backed off",
			in:  input{Interfaces: interfaces(), Claims: []podClaim{claim("ns/p1", macA, "10.0.1.20"), claim("ns/p2", macA, "10.0.1.21")}},
			ec2: map[string]string{"10.0.1.20": "eni-foreign"}, verified: []string{"10.0.1.20", "10.0.1.21"},
			assign: "eni-a:10.0.1.21", record: []v1alpha1.PodAddress{rec("10.0.1.21", "eni-a", "ns/p2")}, refused: []string{"ns/p1:" + ReasonAddressTaken},
			taken: []string{"10.0.1.20"}, backoff: []string{"ns/p1:10.0.1.20"}, reg: 1},
		{name: "EC2 not answering: nothing recorded or assigned",
			in:         input{Interfaces: interfaces(), Claims: []podClaim{claim("ns/p1", macA, "10.0.1.20")}},
			unanswered: true, verified: []string{"10.0.1.20"}},
		{name: "a claim EC2 refused lately: refused again without asking",
			in: input{Interfaces: interfaces(), Claims: []podClaim{claim("ns/p1", macA, "10.0.1.20")},
				Backoff: map[claimKey]refusal{{"ns/p1", netip.MustParseAddr("10.0.1.20")}: {Pod: "ns/p1", NodeENI: "multus", Reason: ReasonAssignFailed, Message: "refused"}}},
			refused: []string{"ns/p1:" + ReasonAssignFailed}},
		{name: "addresses AWS reserves in the subnet: refused before any call",
			in:      input{Interfaces: interfaces(), Claims: []podClaim{claim("ns/p1", macA, "10.0.1.0", "10.0.1.1", "10.0.1.3"), claim("ns/p2", macA, "10.0.1.255", "2600:1f18::2")}},
			refused: []string{"ns/p1:" + ReasonReserved, "ns/p1:" + ReasonReserved, "ns/p1:" + ReasonReserved, "ns/p2:" + ReasonReserved, "ns/p2:" + ReasonReserved}},
		{name: "an unreadable network status is refused and does not stop the others",
			in:     input{Interfaces: interfaces(), Claims: []podClaim{{Pod: "ns/bad", Err: errors.New("not JSON")}, claim("ns/p1", macA, "10.0.1.20")}},
			assign: "eni-a:10.0.1.20", record: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/p1")}, refused: []string{"ns/bad:" + ReasonBadNetworkState}, verified: []string{"10.0.1.20"}, reg: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.in.HeldBy == nil {
				c.in.HeldBy = nobody
			}
			d, asked := settle(c.in, c.ec2, !c.unanswered)
			if got := fmt.Sprint(asked); got != fmt.Sprint(c.verified) {
				t.Errorf("EC2 asked about %s, want %v", got, c.verified)
			}
			var backoff []string
			for k := range d.EC2Refused {
				backoff = append(backoff, k.Pod+":"+k.Addr.String())
			}
			if slices.Sort(backoff); !slices.Equal(backoff, c.backoff) {
				t.Errorf("backed off %v, want %v", backoff, c.backoff)
			}
			if got := perENI(d.Assign); got != c.assign {
				t.Errorf("assign %q, want %q", got, c.assign)
			}
			if got := perENI(d.Unassign); got != c.unassign {
				t.Errorf("unassign %q, want %q", got, c.unassign)
			}
			if !slices.Equal(d.Record, c.record) {
				t.Errorf("record %v, want %v", d.Record, c.record)
			}
			if !slices.Equal(d.Stale, c.stale) {
				t.Errorf("stale %v, want %v", d.Stale, c.stale)
			}
			var refused []string
			var on []string
			for _, r := range d.Refused {
				refused = append(refused, r.Pod+":"+r.Reason)
				on = append(on, r.NodeENI)
				if r.Message == "" {
					t.Errorf("refusal of %s says nothing", r.Pod)
				}
			}
			if !slices.Equal(refused, c.refused) {
				t.Errorf("refused %v, want %v", refused, c.refused)
			}
			if c.refusedOn != nil && !slices.Equal(on, c.refusedOn) {
				t.Errorf("refused on NodeENIs %v, want %v", on, c.refusedOn)
			}
			var taken []string
			for _, a := range d.Taken {
				taken = append(taken, a.String())
			}
			if !slices.Equal(taken, c.taken) {
				t.Errorf("taken %v, want %v", taken, c.taken)
			}
			if d.Registered["multus"] != c.reg {
				t.Errorf("registered %d, want %d", d.Registered["multus"], c.reg)
			}
		})
	}
}

func perENI(m map[string][]netip.Addr) string {
	var parts []string
	for _, eni := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		var ss []string
		for _, a := range m[eni] {
			ss = append(ss, a.String())
		}
		parts = append(parts, fmt.Sprintf("%s:%s", eni, strings.Join(ss, ",")))
	}
	return strings.Join(parts, ";")
}

func TestParseNetworkStatus(t *testing.T) {
	ok := `[{"name":"aws-cni","interface":"eth0","ips":["10.0.128.7"],"mac":"0a:1b:2c:3d:4e:5f","default":true},
	        {"name":"cnf/multus","interface":"net1","ips":["10.0.1.20","2600:1f18::20"],"mac":"02:AB:cd:00:00:0A","dns":{}},
	        {"name":"cnf/nomac","interface":"net2","ips":["10.0.1.21"]}]`
	got, err := parseNetworkStatus(ok)
	if err != nil || len(got) != 1 || got[0].MAC != "02:ab:cd:00:00:0a" || !slices.Equal(got[0].Addresses, addrs("10.0.1.20", "2600:1f18::20")) {
		t.Fatalf("parsed %+v, %v", got, err)
	}
	many := func(n int) string {
		var ips []string
		for i := range n {
			ips = append(ips, fmt.Sprintf("%q", fmt.Sprintf("10.0.1.%d", i+10)))
		}
		return `[{"name":"x","mac":"02:00:00:00:00:01","ips":[` + strings.Join(ips, ",") + `]}]`
	}
	if _, err := parseNetworkStatus(many(maxAddressesPerPod)); err != nil {
		t.Fatalf("%d addresses refused: %v", maxAddressesPerPod, err)
	}
	for name, v := range map[string]string{
		"not JSON":           "{",
		"too large":          `[` + strings.Repeat(" ", maxStatusBytes) + `]`,
		"too many networks":  `[` + strings.Repeat(`{},`, maxStatusEntries) + `{}]`,
		"too many addresses": many(maxAddressesPerPod + 1),
		"bad MAC":            `[{"name":"x","mac":"02:00:00:00:00:01:02:03","ips":["10.0.1.1"]}]`,
		"bad address":        `[{"name":"x","mac":"02:00:00:00:00:01","ips":["10.0.1.1/24"]}]`,
		"scoped address":     `[{"name":"x","mac":"02:00:00:00:00:01","ips":["fe80::1%eth0"]}]`,
	} {
		if _, err := parseNetworkStatus(v); err == nil || !strings.Contains(err.Error(), NetworkStatusAnnotation) {
			t.Errorf("%s: error %v, want one naming the annotation", name, err)
		}
	}
}

func TestRegistrationNeeded(t *testing.T) {
	plain := v1alpha1.NodeENI{}
	multusOnly := v1alpha1.NodeENI{Spec: v1alpha1.NodeENISpec{Multus: &v1alpha1.MultusSpec{AttachmentDefinition: &v1alpha1.AttachmentDefinitionSpec{}}}}
	registers := v1alpha1.NodeENI{Spec: v1alpha1.NodeENISpec{Multus: &v1alpha1.MultusSpec{RegisterPodAddresses: true}}}
	recorded := v1alpha1.ENINode{Spec: v1alpha1.ENINodeSpec{PodAddresses: []v1alpha1.PodAddress{rec("10.0.1.20", "eni-a", "ns/p1")}}}
	for _, c := range []struct {
		name string
		nes  []v1alpha1.NodeENI
		ens  []v1alpha1.ENINode
		want bool
	}{
		{"nothing", nil, nil, false},
		{"NodeENIs without a multus section", []v1alpha1.NodeENI{plain, plain}, []v1alpha1.ENINode{{}}, false},
		{"attachment definitions only: their pods may name the gate", []v1alpha1.NodeENI{plain, multusOnly}, []v1alpha1.ENINode{{}}, true},
		{"a NodeENI registers", []v1alpha1.NodeENI{plain, registers}, nil, true},
		{"addresses recorded, registration since turned off", []v1alpha1.NodeENI{plain}, []v1alpha1.ENINode{{}, recorded}, true},
	} {
		if got := registrationNeeded(c.nes, c.ens); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
