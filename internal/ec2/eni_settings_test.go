package ec2

import (
	"context"
	"slices"
	"testing"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// InstanceLimits reads a type's network limits with one
// DescribeInstanceTypes for the life of the state: per-interface
// addresses, IPv6 and EFA support, and the network cards.
func TestInstanceLimits(t *testing.T) {
	w := newWorld(t, emulator.World{})
	s := NewState(w.client(t, Config{}))
	ctx := context.Background()
	for range 2 {
		l, err := s.InstanceLimits(ctx, "p4d.24xlarge")
		if err != nil {
			t.Fatal(err)
		}
		want := []awstypes.NetworkCard{{Index: 0, MaxENIs: 15}, {Index: 1, MaxENIs: 15}, {Index: 2, MaxENIs: 15}, {Index: 3, MaxENIs: 15}}
		if l.MaxENIs != 60 || l.IPv4PerInterface != 50 || l.IPv6PerInterface != 50 || !l.IPv6Supported || !l.EFASupported ||
			!slices.Equal(l.NetworkCards, want) {
			t.Fatalf("p4d.24xlarge limits %+v", l)
		}
		if c, ok := l.Card(3); !ok || c.MaxENIs != 15 {
			t.Errorf("card 3: %+v %v", c, ok)
		}
		if _, ok := l.Card(4); ok {
			t.Error("card 4 of a 4-card type exists")
		}
	}
	if n, err := s.MaxENIs(ctx, "p4d.24xlarge"); err != nil || n != 60 {
		t.Errorf("MaxENIs = %d, %v", n, err)
	}
	if n := w.calls("DescribeInstanceTypes"); n != 1 {
		t.Errorf("%d DescribeInstanceTypes calls, want 1", n)
	}
	// A type that lists no cards has one, of all its interfaces.
	if c, ok := (awstypes.InstanceLimits{MaxENIs: 3}).Card(0); !ok || c.MaxENIs != 3 {
		t.Errorf("card 0 of a type listing none: %+v %v", c, ok)
	}
}

// Create with address counts and an interface type, attach on a network
// card, turn the source/destination check off and assign addresses: each
// is what EC2 then describes, and the state records it.
func TestENISettingsRoundTrip(t *testing.T) {
	w := newWorld(t, emulator.World{Instances: []emulator.InstanceSpec{{Type: "p4d.24xlarge", Subnet: "a"}}})
	s := NewState(w.client(t, Config{}))
	ctx := context.Background()
	e, err := s.CreateENI(ctx, awstypes.CreateENIInput{SubnetID: w.subnet, SecondaryIPv4Count: 2, IPv6AddressCount: 1, InterfaceType: "efa"})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.SecondaryIPs) != 2 || len(e.IPv6Addresses) != 1 || e.InterfaceType != "efa" || !e.SourceDestCheck {
		t.Fatalf("created %+v: want 2 secondary, 1 IPv6, efa, the check on", e)
	}
	if _, err := s.AttachENI(ctx, e.ID, w.loaded.Instances[0].ID, 0, 2); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSourceDestCheck(ctx, e.ID, false); err != nil {
		t.Fatal(err)
	}
	if err := s.AssignPrivateIPs(ctx, e.ID, 3); err != nil {
		t.Fatal(err)
	}
	local, _ := s.ENI(e.ID)
	read, err := s.GetENI(ctx, e.ID)
	if err != nil {
		t.Fatal(err)
	}
	for what, x := range map[string]awstypes.ENI{"recorded": local, "described": read} {
		if a := x.Attachment; a == nil || a.NetworkCardIndex != 2 || a.DeviceIndex != 0 || x.SourceDestCheck || len(x.SecondaryIPs) != 5 {
			t.Errorf("%s: attachment %+v, check %t, %d secondary; want card 2 index 0, off, 5", what, x.Attachment, x.SourceDestCheck,
				len(x.SecondaryIPs))
		}
	}
}
