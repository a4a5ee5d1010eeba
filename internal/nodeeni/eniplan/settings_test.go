package eniplan

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// multiCard is a p4d.24xlarge-like instance: 4 cards of 15 interfaces,
// IPv6 and EFA.
func multiCard() map[string]InstanceView {
	l := awstypes.InstanceLimits{MaxENIs: 60, IPv4PerInterface: 50, IPv6PerInterface: 50, IPv6Supported: true, EFASupported: true,
		NetworkCards: []awstypes.NetworkCard{{Index: 0, MaxENIs: 15}, {Index: 1, MaxENIs: 15}, {Index: 2, MaxENIs: 15}, {Index: 3, MaxENIs: 15}}}
	return map[string]InstanceView{"i-1": {ID: "i-1", Type: "p4d.24xlarge", State: "running", Zone: "z", MaxENIs: 15, Limits: l,
		Slots: map[int]string{0: "eni-primary"}}}
}

// small is an m5.large-like instance: one card (not listed, as a type
// may report), 3 interfaces, 10 IPv4 and IPv6 addresses each, no EFA.
func small(ipv6 bool) map[string]InstanceView {
	l := awstypes.InstanceLimits{MaxENIs: 3, IPv4PerInterface: 10, IPv6PerInterface: 10, IPv6Supported: ipv6}
	return map[string]InstanceView{"i-1": {ID: "i-1", Type: "m5.large", State: "running", Zone: "z", MaxENIs: 3, Limits: l,
		Slots: map[int]string{0: "eni-primary"}}}
}

// onCard is an ENI of the plan tests attached on a network card.
func onCard(o Owned, card int) Owned {
	a := *o.Attachment
	a.NetworkCardIndex = card
	o.Attachment = &a
	return o
}

// Each check of the settings against the node's instance type blocks the
// create with its own reason, before anything is created.
func TestMakePlanSettingsChecks(t *testing.T) {
	cases := []struct {
		name string
		edit func(in *PlanInput)
		want string
	}{
		{"all within the type: create", func(in *PlanInput) {
			in.Instances = multiCard()
			in.Settings = ENISettings{SecondaryIPv4: 49, IPv6Addresses: 50, Card: 3, InterfaceType: "efa"}
		}, "create n1/s-a@1"},
		{"card beyond the type", func(in *PlanInput) {
			in.Instances = multiCard()
			in.Settings.Card = 4
		}, "blocked n1 NetworkCardBeyondLimit"},
		{"card 1 on a type of one card", func(in *PlanInput) {
			in.Instances = small(true)
			in.Settings.Card = 1
		}, "blocked n1 NetworkCardBeyondLimit"},
		{"secondary addresses and the primary over the type's IPv4 per interface", func(in *PlanInput) {
			in.Instances = small(true)
			in.Settings.SecondaryIPv4 = 10
		}, "blocked n1 AddressLimitExceeded"},
		{"secondary addresses and the primary exactly the type's IPv4 per interface", func(in *PlanInput) {
			in.Instances = small(true)
			in.Settings.SecondaryIPv4 = 9
		}, "create n1/s-a@1"},
		{"IPv6 on a type without IPv6", func(in *PlanInput) {
			in.Instances = small(false)
			in.Settings.IPv6Addresses = 1
		}, "blocked n1 IPv6NotSupported"},
		{"IPv6 prefixes over the type's IPv6 per interface", func(in *PlanInput) {
			in.Instances = small(true)
			in.Settings.IPv6Prefixes = 11
		}, "blocked n1 AddressLimitExceeded"},
		{"EFA on a type without EFA", func(in *PlanInput) {
			in.Instances = small(true)
			in.Settings.InterfaceType = "efa-only"
		}, "blocked n1 EFANotSupported"},
		{"an existing ENI: only the card is checked before the attach (EC2 refuses the addresses over the limit)", func(in *PlanInput) {
			in.Instances = small(true)
			in.Settings.SecondaryIPv4 = 10
			in.ENIs = []Owned{eni("e1", "n1", "i-1", "s-a", 1, 1, "", true)}
		}, "assign-private-ips e1; attach e1@1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkPlan(t, func(in *PlanInput) { in.Wants = in.Wants[:1]; c.edit(in) }, c.want, 0)
		})
	}
}

// Device indexes and interfaces count on the spec's network card: the
// instance view holds that card's slots (gather.go), and ENIs leaving
// another card neither free nor hold them.
func TestMakePlanCardSlots(t *testing.T) {
	checkPlan(t, func(in *PlanInput) {
		in.Wants = in.Wants[:1]
		in.Instances = multiCard()
		in.Settings.Card = 1
		// Card 1 has its index 0 free: the plan asks for index 1 (base).
		in.ENIs = []Owned{onCard(eni("e9", "n1", "i-old", "s-a", 1, 1, "attached", true), 0)}
	}, "detach e9 (InstanceReplaced); create n1/s-a@1", 0)
	full := multiCard()
	v := full["i-1"]
	v.MaxENIs, v.Slots = 2, map[int]string{0: "x", 1: "y"}
	full["i-1"] = v
	checkPlan(t, func(in *PlanInput) {
		in.Wants = in.Wants[:1]
		in.Instances, in.Settings.Card = full, 1
	}, "blocked n1 ENILimitReached", 0)
}

// interfaceType and networkCardIndex cannot change on an ENI: a change
// replaces it, make before break (the old one stays attached until the
// new one is, or goes first when they need the same index).
func TestMakePlanSettingsChangeReplaces(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(in *PlanInput)
		want  string
		ready int
	}{
		{"card 0 -> 1: the new one on card 1 first, the old one kept", func(in *PlanInput) {
			in.Instances, in.Settings.Card = multiCard(), 1
			in.ENIs = []Owned{eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", true)}
		}, "create n1/s-a@1", 0},
		{"card 0 -> 1 done: the old one goes", func(in *PlanInput) {
			in.Settings.Card = 1
			in.ENIs = []Owned{eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", true),
				onCard(eni("e2", "n1", "i-1", "s-a", 1, 1, "attached", true), 1)}
		}, "detach e1 (SettingsChanged)", 1},
		{"interface -> efa at the same index: the old one goes first", func(in *PlanInput) {
			in.Instances = multiCard()
			in.Instances["i-1"].Slots[1] = "e1"
			in.Settings.InterfaceType = "efa"
			in.ENIs = []Owned{eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", true)}
		}, "detach e1 (SettingsChanged); blocked n1 WaitingForDetach", 0},
		{"efa asked of a type without it: the old one kept, the node degraded", func(in *PlanInput) {
			in.Instances = small(true)
			in.Instances["i-1"].Slots[1] = "e1"
			in.Settings.InterfaceType = "efa"
			in.ENIs = []Owned{eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", true)}
		}, "blocked n1 EFANotSupported", 0},
		{"address counts changed: kept, the missing addresses assigned", func(in *PlanInput) {
			in.Settings = ENISettings{SecondaryIPv4: 3, IPv6Addresses: 2}
			in.ENIs = []Owned{eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", true)}
		}, "assign-private-ips e1", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkPlan(t, func(in *PlanInput) { in.Wants = in.Wants[:1]; c.edit(in) }, c.want, c.ready)
		})
	}
}

// The in-place settings: the source/destination check as the spec sets
// it (unset leaves it), and the secondary addresses an ENI lacks, never
// fewer (others may have assigned more on the same ENI).
func TestSettingsDrift(t *testing.T) {
	withIPs := func(n int, check bool) Owned {
		o := eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", true)
		o.SourceDestCheck = check
		for range n {
			o.SecondaryIPs = append(o.SecondaryIPs, "10.0.0.9")
		}
		return o
	}
	cases := []struct {
		name string
		s    ENISettings
		o    Owned
		want []Action
	}{
		{"nothing asked", ENISettings{}, withIPs(2, true), nil},
		{"check unset, off on the ENI: left", ENISettings{}, withIPs(0, false), nil},
		{"check off asked, on on the ENI", ENISettings{SourceDestCheck: ptr.To(false)}, withIPs(0, true),
			[]Action{{Kind: ActSetSourceDestCheck, Node: "n1", ENI: "e1", Check: false}}},
		{"check on asked, off on the ENI", ENISettings{SourceDestCheck: ptr.To(true)}, withIPs(0, false),
			[]Action{{Kind: ActSetSourceDestCheck, Node: "n1", ENI: "e1", Check: true}}},
		{"check as asked", ENISettings{SourceDestCheck: ptr.To(false)}, withIPs(0, false), nil},
		{"two addresses short", ENISettings{SecondaryIPv4: 5}, withIPs(3, true), []Action{{Kind: ActAssignIPs, Node: "n1", ENI: "e1", Count: 2}}},
		{"more than asked (pod addresses, or the count lowered): nothing taken back", ENISettings{SecondaryIPv4: 2}, withIPs(7, true), nil},
		{"efa-only has no addresses to assign", ENISettings{SecondaryIPv4: 2, InterfaceType: "efa-only"}, withIPs(0, true), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := SettingsDrift(c.s, c.o)
			if len(got) != len(c.want) {
				t.Fatalf("%+v, want %+v", got, c.want)
			}
			for i := range got {
				if g, w := got[i], c.want[i]; g.Kind != w.Kind || g.ENI != w.ENI || g.Check != w.Check || g.Count != w.Count {
					t.Errorf("action %d: %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

// An ENI made for another interface type or attached on another card
// serves no want of the spec; a detached one serves any card.
func TestSettingsMatches(t *testing.T) {
	plain := eni("e1", "n1", "i-1", "s-a", 1, 1, "attached", true)
	detached := eni("e2", "n1", "i-1", "s-a", 1, 1, "", true)
	efa := plain
	efa.InterfaceType = "efa"
	for _, c := range []struct {
		name string
		s    ENISettings
		o    Owned
		want bool
	}{
		{"plain, spec unset", ENISettings{}, plain, true},
		{"plain, spec interface", ENISettings{InterfaceType: "interface"}, plain, true},
		{"plain, spec efa", ENISettings{InterfaceType: "efa"}, plain, false},
		{"efa, spec efa", ENISettings{InterfaceType: "efa"}, efa, true},
		{"card 0, spec card 1", ENISettings{Card: 1}, plain, false},
		{"card 1, spec card 1", ENISettings{Card: 1}, onCard(plain, 1), true},
		{"detached, spec card 2", ENISettings{Card: 2}, detached, true},
	} {
		if got := c.s.Matches(c.o); got != c.want {
			t.Errorf("%s: matches = %v, want %v", c.name, got, c.want)
		}
	}
	if (ENISettings{}).Variant() != "" || (ENISettings{InterfaceType: "interface"}).Variant() != "" {
		t.Error("a plain ENI on card 0 has a variant: its ClientToken would differ from earlier versions'")
	}
	if (ENISettings{Card: 1}).Variant() == (ENISettings{InterfaceType: "efa"}).Variant() {
		t.Error("card 1 and efa share a variant")
	}
}
