package ec2conformance

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// The ENI settings a NodeENI can ask for (issue 28): instance-type
// network limits, address counts at creation, IPv6 addresses, the
// source/destination check, network cards and EFA. Each case takes its
// target, so the same cases run against moto (moto_test.go).

// multiCardType has several network cards and EFA: p4d.24xlarge has 4
// cards of 15 interfaces.
const multiCardType = "p4d.24xlarge"

// settingsCases are the cases of this file, by name.
func settingsCases() map[string]func(*testing.T, *target) {
	return map[string]func(*testing.T, *target){
		"InstanceTypeNetworkInfo":        testInstanceTypeNetworkInfo,
		"CreateWithAddressCounts":        testCreateWithAddressCounts,
		"CreateRefusesIPv6WithoutCIDR":   testCreateRefusesIPv6WithoutCIDR,
		"CreateRefusesAddressesPrefixes": testCreateRefusesAddressesAndPrefixes,
		"SourceDestCheck":                testSourceDestCheck,
		"AssignUnassignIPv6":             testAssignUnassignIPv6,
		"NetworkCards":                   testNetworkCards,
		"EFA":                            testEFA,
	}
}

func TestENISettings(t *testing.T) {
	runOnSuite(t, settingsCases())
}

// DescribeInstanceTypes reports per-interface address limits, IPv6 and
// EFA support and the network cards.
func testInstanceTypeNetworkInfo(t *testing.T, tg *target) {
	out, err := tg.client().DescribeInstanceTypes(t.Context(), &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []types.InstanceType{types.InstanceType(largeType), types.InstanceType(multiCardType)}})
	noErr(t, err, "DescribeInstanceTypes")
	got := map[string]*types.NetworkInfo{}
	for _, it := range out.InstanceTypes {
		got[string(it.InstanceType)] = it.NetworkInfo
	}
	small, big := got[largeType], got[multiCardType]
	if small == nil || big == nil {
		t.Fatalf("DescribeInstanceTypes returned %v, want both types with networkInfo", got)
	}
	if aws.ToInt32(small.MaximumNetworkCards) != 1 || len(small.NetworkCards) != 1 || aws.ToBool(small.EfaSupported) ||
		!aws.ToBool(small.Ipv6Supported) || aws.ToInt32(small.Ipv6AddressesPerInterface) != 10 {
		t.Errorf("%s: cards %d %+v, EFA %v, IPv6 %v (%d per interface); want 1 card, no EFA, IPv6 with 10",
			largeType, aws.ToInt32(small.MaximumNetworkCards), small.NetworkCards, aws.ToBool(small.EfaSupported),
			aws.ToBool(small.Ipv6Supported), aws.ToInt32(small.Ipv6AddressesPerInterface))
	}
	if aws.ToInt32(big.MaximumNetworkCards) != 4 || len(big.NetworkCards) != 4 || !aws.ToBool(big.EfaSupported) {
		t.Fatalf("%s: %d cards (%d listed), EFA %v; want 4 cards and EFA", multiCardType, aws.ToInt32(big.MaximumNetworkCards),
			len(big.NetworkCards), aws.ToBool(big.EfaSupported))
	}
	for i, c := range big.NetworkCards {
		if aws.ToInt32(c.NetworkCardIndex) != int32(i) || aws.ToInt32(c.MaximumNetworkInterfaces) != 15 {
			t.Errorf("%s card %d: index %d, %d interfaces; want index %d, 15", multiCardType, i, aws.ToInt32(c.NetworkCardIndex),
				aws.ToInt32(c.MaximumNetworkInterfaces), i)
		}
	}
}

// SecondaryPrivateIpAddressCount and Ipv6AddressCount give a new ENI
// that many addresses, inside its subnet.
func testCreateWithAddressCounts(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{ipv6: true})
	n := w.createENI(&ec2.CreateNetworkInterfaceInput{SecondaryPrivateIpAddressCount: aws.Int32(3), Ipv6AddressCount: aws.Int32(2)})
	got := w.eni(aws.ToString(n.NetworkInterfaceId))
	_, secondary := ipsOf(got)
	if len(secondary) != 3 || len(got.Ipv6Addresses) != 2 {
		t.Fatalf("%d secondary IPv4 and %d IPv6 addresses, want 3 and 2", len(secondary), len(got.Ipv6Addresses))
	}
	for _, a := range got.Ipv6Addresses {
		if ip, err := netip.ParseAddr(aws.ToString(a.Ipv6Address)); err != nil || !ip.Is6() {
			t.Errorf("IPv6 address %q", aws.ToString(a.Ipv6Address))
		}
	}
	if !aws.ToBool(got.SourceDestCheck) {
		t.Error("a new ENI's source/destination check is off, want EC2's default (on)")
	}
}

// IPv6 addresses need a subnet with an IPv6 CIDR.
func testCreateRefusesIPv6WithoutCIDR(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{})
	_, err := w.ec2.CreateNetworkInterface(t.Context(), &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id),
		Ipv6AddressCount: aws.Int32(1)})
	requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
}

// Secondary addresses and prefixes of one family exclude each other.
func testCreateRefusesAddressesAndPrefixes(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{})
	_, err := w.ec2.CreateNetworkInterface(t.Context(), &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id),
		SecondaryPrivateIpAddressCount: aws.Int32(1), Ipv4PrefixCount: aws.Int32(1)})
	requireAPIError(t, err, "InvalidParameterCombination", http.StatusBadRequest)
}

// ModifyNetworkInterfaceAttribute turns the check off and on again, and
// DescribeNetworkInterfaces shows it.
func testSourceDestCheck(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{})
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	for _, v := range []bool{false, true} {
		_, err := w.ec2.ModifyNetworkInterfaceAttribute(t.Context(), &ec2.ModifyNetworkInterfaceAttributeInput{
			NetworkInterfaceId: aws.String(id), SourceDestCheck: &types.AttributeBooleanValue{Value: aws.Bool(v)}})
		noErr(t, err, "setting the source/destination check to %t", v)
		if got := aws.ToBool(w.eni(id).SourceDestCheck); got != v {
			t.Fatalf("source/destination check %t after setting it to %t", got, v)
		}
	}
}

// AssignIpv6Addresses adds counted and named addresses; Unassign takes
// named ones back; an attached ENI holds at most its type's IPv6
// addresses per interface.
func testAssignUnassignIPv6(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{ipv6: true, instances: 1})
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{Ipv6AddressCount: aws.Int32(1)}).NetworkInterfaceId)
	out, err := w.ec2.AssignIpv6Addresses(t.Context(), &ec2.AssignIpv6AddressesInput{NetworkInterfaceId: aws.String(id),
		Ipv6AddressCount: aws.Int32(2)})
	noErr(t, err, "AssignIpv6Addresses")
	if len(out.AssignedIpv6Addresses) != 2 || len(w.eni(id).Ipv6Addresses) != 3 {
		t.Fatalf("assigned %v, ENI has %d; want 2 assigned, 3 in all", out.AssignedIpv6Addresses, len(w.eni(id).Ipv6Addresses))
	}
	_, err = w.ec2.UnassignIpv6Addresses(t.Context(), &ec2.UnassignIpv6AddressesInput{NetworkInterfaceId: aws.String(id),
		Ipv6Addresses: out.AssignedIpv6Addresses[:1]})
	noErr(t, err, "UnassignIpv6Addresses")
	if n := len(w.eni(id).Ipv6Addresses); n != 2 {
		t.Fatalf("%d IPv6 addresses after unassigning one of 3", n)
	}
	w.attach(id, w.instances[0], 1)
	_, err = w.ec2.AssignIpv6Addresses(t.Context(), &ec2.AssignIpv6AddressesInput{NetworkInterfaceId: aws.String(id),
		Ipv6AddressCount: aws.Int32(9)})
	requireAPIError(t, err, "Ipv6AddressLimitExceeded", http.StatusBadRequest)
}

// An ENI attaches to a network card the type has, its device index
// counted on that card; a card beyond the type's is refused.
func testNetworkCards(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{instances: 1, instanceType: multiCardType})
	inst := w.instances[0]
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	// Device index 0 of card 1 is free: card 0's index 0 is the primary.
	out, err := w.ec2.AttachNetworkInterface(t.Context(), &ec2.AttachNetworkInterfaceInput{NetworkInterfaceId: aws.String(id),
		InstanceId: aws.String(inst), DeviceIndex: aws.Int32(0), NetworkCardIndex: aws.Int32(1)})
	noErr(t, err, "attaching at card 1, index 0")
	if aws.ToInt32(out.NetworkCardIndex) != 1 {
		t.Errorf("AttachNetworkInterface answered card %d, want 1", aws.ToInt32(out.NetworkCardIndex))
	}
	if a := w.eni(id).Attachment; a == nil || aws.ToInt32(a.NetworkCardIndex) != 1 || aws.ToInt32(a.DeviceIndex) != 0 {
		t.Fatalf("attachment %+v, want card 1 index 0", a)
	}
	other := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	_, err = w.ec2.AttachNetworkInterface(t.Context(), &ec2.AttachNetworkInterfaceInput{NetworkInterfaceId: aws.String(other),
		InstanceId: aws.String(inst), DeviceIndex: aws.Int32(1), NetworkCardIndex: aws.Int32(4)})
	requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
}

// An EFA attaches only to a type that supports EFA.
func testEFA(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{instances: 1})
	efa := w.createENI(&ec2.CreateNetworkInterfaceInput{InterfaceType: types.NetworkInterfaceCreationTypeEfa})
	id := aws.ToString(efa.NetworkInterfaceId)
	if got := w.eni(id).InterfaceType; got != types.NetworkInterfaceTypeEfa {
		t.Fatalf("interface type %q, want efa", got)
	}
	_, err := w.ec2.AttachNetworkInterface(t.Context(), &ec2.AttachNetworkInterfaceInput{NetworkInterfaceId: aws.String(id),
		InstanceId: aws.String(w.instances[0]), DeviceIndex: aws.Int32(1)})
	requireAPIError(t, err, "InvalidParameterCombination", http.StatusBadRequest)
}
