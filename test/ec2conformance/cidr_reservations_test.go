package ec2conformance

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Subnet CIDR reservations: ranges of a subnet EC2 assigns only when
// named. Each case takes its target, so the cases run against moto too
// (moto_test.go).

// reservationCases are the cases of this file, by name.
func reservationCases() map[string]func(*testing.T, *target) {
	return map[string]func(*testing.T, *target){
		"CIDRReservationLifecycle":            testCIDRReservationLifecycle,
		"CIDRReservationFilters":              testCIDRReservationFilters,
		"CIDRReservationOverlapRefused":       testCIDRReservationOverlapRefused,
		"CIDRReservationOutsideSubnet":        testCIDRReservationOutsideSubnet,
		"AutoAssignmentAvoidsReservation":     testAutoAssignmentAvoidsReservation,
		"ExplicitAssignmentInsideReservation": testExplicitAssignmentInsideReservation,
	}
}

func TestSubnetCIDRReservations(t *testing.T) {
	runOnSuite(t, reservationCases())
}

// reserve creates an explicit reservation of cidr in a subnet or fails
// the test.
func (w *world) reserve(subnetID, cidr string, tagKV ...string) types.SubnetCidrReservation {
	w.t.Helper()
	in := &ec2.CreateSubnetCidrReservationInput{SubnetId: aws.String(subnetID), Cidr: aws.String(cidr),
		ReservationType: types.SubnetCidrReservationTypeExplicit, Description: aws.String(w.name)}
	if len(tagKV) > 0 {
		in.TagSpecifications = tagSpec(types.ResourceTypeSubnetCidrReservation, tagKV...)
	}
	out, err := w.ec2.CreateSubnetCidrReservation(w.t.Context(), in)
	noErr(w.t, err, "CreateSubnetCidrReservation %s in %s", cidr, subnetID)
	return *out.SubnetCidrReservation
}

// reservationIDs lists the IDs of a subnet's IPv4 reservations that
// match the filters.
func (w *world) reservationIDs(subnetID string, filters ...types.Filter) []string {
	w.t.Helper()
	out, err := w.ec2.GetSubnetCidrReservations(w.t.Context(), &ec2.GetSubnetCidrReservationsInput{SubnetId: aws.String(subnetID),
		Filters: filters})
	noErr(w.t, err, "GetSubnetCidrReservations of %s", subnetID)
	var ids []string
	for _, r := range out.SubnetIpv4CidrReservations {
		ids = append(ids, aws.ToString(r.SubnetCidrReservationId))
	}
	return sorted(ids...)
}

// offset is the address n past the start of a subnet CIDR.
func offset(p netip.Prefix, n int) netip.Addr {
	a := p.Masked().Addr()
	for range n {
		a = a.Next()
	}
	return a
}

// Create answers the reservation as asked; Get lists it with its
// description and tags; Delete answers it and Get no longer lists it.
func testCIDRReservationLifecycle(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{})
	cidr := netip.PrefixFrom(offset(w.a.cidr, 16), 28).String()
	r := w.reserve(w.a.id, cidr, "Name", w.name)
	id := aws.ToString(r.SubnetCidrReservationId)
	if id == "" || aws.ToString(r.SubnetId) != w.a.id || aws.ToString(r.Cidr) != cidr ||
		r.ReservationType != types.SubnetCidrReservationTypeExplicit {
		t.Fatalf("created %+v, want an explicit reservation of %s in %s", r, cidr, w.a.id)
	}
	if aws.ToString(r.Description) != w.name || tagMap(r.Tags)["Name"] != w.name {
		t.Errorf("created with description %q and tags %v, want %q and Name=%s", aws.ToString(r.Description), tagMap(r.Tags), w.name, w.name)
	}
	out, err := w.ec2.GetSubnetCidrReservations(t.Context(), &ec2.GetSubnetCidrReservationsInput{SubnetId: aws.String(w.a.id)})
	noErr(t, err, "GetSubnetCidrReservations")
	if len(out.SubnetIpv4CidrReservations) != 1 || len(out.SubnetIpv6CidrReservations) != 0 {
		t.Fatalf("listed %d IPv4 and %d IPv6 reservations, want 1 and 0",
			len(out.SubnetIpv4CidrReservations), len(out.SubnetIpv6CidrReservations))
	}
	got := out.SubnetIpv4CidrReservations[0]
	if aws.ToString(got.SubnetCidrReservationId) != id || aws.ToString(got.Cidr) != cidr || tagMap(got.Tags)["Name"] != w.name ||
		aws.ToString(got.Description) != w.name {
		t.Errorf("listed %+v, want %s of %s tagged Name=%s", got, id, cidr, w.name)
	}
	del, err := w.ec2.DeleteSubnetCidrReservation(t.Context(), &ec2.DeleteSubnetCidrReservationInput{SubnetCidrReservationId: aws.String(id)})
	noErr(t, err, "DeleteSubnetCidrReservation %s", id)
	if d := del.DeletedSubnetCidrReservation; d == nil || aws.ToString(d.SubnetCidrReservationId) != id {
		t.Errorf("Delete answered %+v, want %s", d, id)
	}
	if ids := w.reservationIDs(w.a.id); len(ids) != 0 {
		t.Errorf("after the delete the subnet lists %v", ids)
	}
}

// Get narrows by reservation ID and by tag.
func testCIDRReservationFilters(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{})
	one := aws.ToString(w.reserve(w.a.id, netip.PrefixFrom(offset(w.a.cidr, 16), 28).String(), "role", "one").SubnetCidrReservationId)
	two := aws.ToString(w.reserve(w.a.id, netip.PrefixFrom(offset(w.a.cidr, 32), 28).String(), "role", "two").SubnetCidrReservationId)
	if ids := w.reservationIDs(w.a.id); len(ids) != 2 {
		t.Fatalf("listed %v, want %s and %s", ids, one, two)
	}
	if ids := w.reservationIDs(w.a.id, filter("subnet-cidr-reservation-id", two)); len(ids) != 1 || ids[0] != two {
		t.Errorf("by ID listed %v, want [%s]", ids, two)
	}
	if ids := w.reservationIDs(w.a.id, filter("tag:role", "one")); len(ids) != 1 || ids[0] != one {
		t.Errorf("by tag listed %v, want [%s]", ids, one)
	}
}

// A CIDR overlapping another reservation of the subnet is refused.
func testCIDRReservationOverlapRefused(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{})
	w.reserve(w.a.id, netip.PrefixFrom(offset(w.a.cidr, 16), 28).String())
	_, err := w.ec2.CreateSubnetCidrReservation(t.Context(), &ec2.CreateSubnetCidrReservationInput{SubnetId: aws.String(w.a.id),
		Cidr: aws.String(netip.PrefixFrom(offset(w.a.cidr, 0), 27).String()), ReservationType: types.SubnetCidrReservationTypeExplicit})
	requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
	if ids := w.reservationIDs(w.a.id); len(ids) != 1 {
		t.Errorf("the refused reservation is listed: %v", ids)
	}
}

// A CIDR outside the subnet's CIDR (here: the other subnet's) is refused.
func testCIDRReservationOutsideSubnet(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{})
	_, err := w.ec2.CreateSubnetCidrReservation(t.Context(), &ec2.CreateSubnetCidrReservationInput{SubnetId: aws.String(w.a.id),
		Cidr: aws.String(netip.PrefixFrom(offset(w.b.cidr, 16), 28).String()), ReservationType: types.SubnetCidrReservationTypeExplicit})
	requireAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
}

// Automatic assignment never takes an address of an explicit
// reservation: a /28 (11 usable addresses) with 4 of them reserved gives
// ENIs 7 addresses, none reserved, and then answers
// InsufficientFreeAddressesInSubnet to a create and to a counted assign.
func testAutoAssignmentAvoidsReservation(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{})
	tiny := w.tinySubnet(2)
	reserved := netip.PrefixFrom(offset(tiny.cidr, 8), 30)
	w.reserve(tiny.id, reserved.String())
	n := w.createENI(&ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(tiny.id), SecondaryPrivateIpAddressCount: aws.Int32(6)})
	for _, a := range n.PrivateIpAddresses {
		if ip := netip.MustParseAddr(aws.ToString(a.PrivateIpAddress)); reserved.Contains(ip) {
			t.Errorf("ENI was given %s of the explicit reservation %s", ip, reserved)
		}
	}
	_, err := w.ec2.CreateNetworkInterface(t.Context(), &ec2.CreateNetworkInterfaceInput{SubnetId: aws.String(tiny.id)})
	requireAPIError(t, err, "InsufficientFreeAddressesInSubnet", http.StatusBadRequest)
	_, err = w.ec2.AssignPrivateIpAddresses(t.Context(), &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: n.NetworkInterfaceId,
		SecondaryPrivateIpAddressCount: aws.Int32(1)})
	requireAPIError(t, err, "InsufficientFreeAddressesInSubnet", http.StatusBadRequest)
}

// An address of an explicit reservation is assigned when named, at
// creation and by AssignPrivateIpAddresses.
func testExplicitAssignmentInsideReservation(t *testing.T, tg *target) {
	w := newWorld(t, tg, worldSpec{})
	reserved := netip.PrefixFrom(offset(w.a.cidr, 16), 28)
	w.reserve(w.a.id, reserved.String())
	primary := offset(reserved, 1).String()
	n := w.createENI(&ec2.CreateNetworkInterfaceInput{PrivateIpAddress: aws.String(primary)})
	if got := aws.ToString(n.PrivateIpAddress); got != primary {
		t.Fatalf("created with primary %s, want %s", got, primary)
	}
	second := offset(reserved, 2).String()
	_, err := w.ec2.AssignPrivateIpAddresses(t.Context(), &ec2.AssignPrivateIpAddressesInput{NetworkInterfaceId: n.NetworkInterfaceId,
		PrivateIpAddresses: []string{second}})
	noErr(t, err, "assigning %s of the reservation", second)
	if _, sec := ipsOf(w.eni(aws.ToString(n.NetworkInterfaceId))); len(sec) != 1 || sec[0] != second {
		t.Errorf("secondary addresses %v, want [%s]", sec, second)
	}
}
