package ec2conformance

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// AWS reserves the first four addresses and the last of every subnet CIDR,
// IPv4 and IPv6. Each case takes its target, so the cases run against
// moto too (moto_test.go).

// reservedCases are the cases of this file, by name.
func reservedCases() map[string]func(*testing.T, *target) {
	return map[string]func(*testing.T, *target){
		"ReservedAddressesRefused":    testReservedAddressesRefused,
		"AutoAssignmentSkipsReserved": testAutoAssignmentSkipsReserved,
	}
}

func TestReservedAddresses(t *testing.T) {
	runOnSuite(t, reservedCases())
}

// Naming a reserved address is InvalidParameterValue in
// CreateNetworkInterface (primary, secondary, IPv6), AssignPrivateIpAddresses
// and AssignIpv6Addresses, and changes nothing.
func testReservedAddressesRefused(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{ipv6: true})
	v6 := w.subnetIPv6(w.a.id)
	id := aws.ToString(w.createENI(&ec2.CreateNetworkInterfaceInput{}).NetworkInterfaceId)
	for _, a := range reservedOf(w.a.cidr) {
		ip := a.String()
		t.Run(ip, func(t *testing.T) {
			_, err := w.ec2.CreateNetworkInterface(t.Context(), &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id),
				PrivateIpAddress: aws.String(ip)})
			requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
			_, err = w.ec2.CreateNetworkInterface(t.Context(), &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id),
				PrivateIpAddresses: []types.PrivateIpAddressSpecification{{PrivateIpAddress: aws.String(ip), Primary: aws.Bool(false)}}})
			requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
			_, err = w.ec2.AssignPrivateIpAddresses(t.Context(), &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: aws.String(id),
				PrivateIpAddresses: []string{ip}})
			requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
		})
	}
	for _, a := range reservedOf(v6) {
		ip := a.String()
		t.Run(ip, func(t *testing.T) {
			_, err := w.ec2.CreateNetworkInterface(t.Context(), &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(w.a.id),
				Ipv6Addresses: []types.InstanceIpv6Address{{Ipv6Address: aws.String(ip)}}})
			requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
			_, err = w.ec2.AssignIpv6Addresses(t.Context(), &ec2.AssignIpv6AddressesInput{NetworkInterfaceId: aws.String(id),
				Ipv6Addresses: []string{ip}})
			requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
		})
	}
	n := w.eni(id)
	if _, sec := ipsOf(n); len(sec) != 0 || len(n.Ipv6Addresses) != 0 {
		t.Errorf("refused assignments left %v and %d IPv6 addresses on the ENI", sec, len(n.Ipv6Addresses))
	}
	if ids, _ := w.eniIDs(); len(ids) != 1 {
		t.Errorf("refused creates left ENIs behind: %v", ids)
	}
}

// Automatic assignment never picks a reserved address: a /28 holds 11
// ENI addresses, none of them reserved, and then no more.
func testAutoAssignmentSkipsReserved(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{ipv6: true})
	tiny := w.tinySubnet(2)
	n := w.createENI(&ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(tiny.id), SecondaryPrivateIpAddressCount: aws.Int32(10)})
	for _, a := range n.PrivateIpAddresses {
		if ip := netip.MustParseAddr(aws.ToString(a.PrivateIpAddress)); isReserved(tiny.cidr, ip) {
			t.Errorf("ENI was given the reserved address %s of %s", ip, tiny.cidr)
		}
	}
	_, err := w.ec2.CreateNetworkInterface(t.Context(), &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(tiny.id)})
	requireAPIError(t, err, "InsufficientFreeAddressesInSubnet", http.StatusBadRequest)

	v6 := w.subnetIPv6(w.a.id)
	six := w.createENI(&ec2.CreateNetworkInterfaceInput{Ipv6AddressCount: aws.Int32(5)})
	for _, a := range six.Ipv6Addresses {
		if ip := netip.MustParseAddr(aws.ToString(a.Ipv6Address)); isReserved(v6, ip) {
			t.Errorf("ENI was given the reserved IPv6 address %s of %s", ip, v6)
		}
	}
}

// tinySubnet creates a /28 (16 addresses, 11 usable) at the start of the
// idx-th /24 of the world's block, in zone a.
func (w *world) tinySubnet(idx byte) subnetInfo {
	w.t.Helper()
	b := w.a.cidr.Addr().As4()
	b[2] += idx
	cidr := netip.PrefixFrom(netip.AddrFrom4(b), 28)
	out, err := w.ec2.CreateSubnet(w.t.Context(), &ec2.CreateSubnetInput{VpcId: aws.String(w.vpc), CidrBlock: aws.String(cidr.String()),
		AvailabilityZone: aws.String(w.a.az)})
	noErr(w.t, err, "CreateSubnet %s", cidr)
	return subnetInfo{id: aws.ToString(out.Subnet.SubnetId), az: w.a.az, cidr: cidr}
}

// subnetIPv6 returns the subnet's first IPv6 CIDR.
func (w *world) subnetIPv6(id string) netip.Prefix {
	w.t.Helper()
	out, err := w.ec2.DescribeSubnets(w.t.Context(), &ec2.DescribeSubnetsInput{SubnetIds: []string{id}})
	noErr(w.t, err, "DescribeSubnets %s", id)
	if len(out.Subnets) != 1 || len(out.Subnets[0].Ipv6CidrBlockAssociationSet) == 0 {
		w.t.Fatalf("subnet %s has no IPv6 CIDR", id)
	}
	return netip.MustParsePrefix(aws.ToString(out.Subnets[0].Ipv6CidrBlockAssociationSet[0].Ipv6CidrBlock))
}

// reservedOf lists the reserved addresses of a subnet CIDR, computed here
// independently of the code under test.
func reservedOf(p netip.Prefix) []netip.Addr {
	a := p.Masked().Addr()
	out := []netip.Addr{a, a.Next(), a.Next().Next(), a.Next().Next().Next()}
	last := a.AsSlice()
	for i := p.Bits(); i < len(last)*8; i++ {
		last[i/8] |= 0x80 >> (i % 8)
	}
	l, _ := netip.AddrFromSlice(last)
	return append(out, l)
}

func isReserved(p netip.Prefix, a netip.Addr) bool {
	for _, r := range reservedOf(p) {
		if r == a {
			return true
		}
	}
	return false
}
