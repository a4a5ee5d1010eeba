package ec2

import (
	"context"
	"net/netip"
)

// The State's subnet CIDR reservation calls and the read of a subnet's
// addresses in use: reservations are not ENIs, and the ENIs read for a
// subnet's addresses are mostly others', so none of it enters the
// picture of ENIs.

// CreateSubnetCIDRReservation reserves cidr of a subnet (explicit), its
// tags set with the creation.
func (s *State) CreateSubnetCIDRReservation(ctx context.Context, subnetID, cidr, description string, tags map[string]string) (SubnetCIDRReservation, error) {
	return s.client.CreateSubnetCIDRReservation(ctx, subnetID, cidr, description, tags)
}

// ListSubnetCIDRReservations returns a subnet's reservations.
func (s *State) ListSubnetCIDRReservations(ctx context.Context, subnetID string) ([]SubnetCIDRReservation, error) {
	return s.client.ListSubnetCIDRReservations(ctx, subnetID)
}

// DeleteSubnetCIDRReservation deletes a reservation.
func (s *State) DeleteSubnetCIDRReservation(ctx context.Context, id string) error {
	return s.client.DeleteSubnetCIDRReservation(ctx, id)
}

// SubnetAddresses reads the IPv4 addresses and prefixes every ENI of a
// subnet holds now (one DescribeNetworkInterfaces per 1,000 ENIs).
func (s *State) SubnetAddresses(ctx context.Context, subnetID string) ([]netip.Prefix, error) {
	enis, err := s.client.ListENIs(ctx, Filter{Name: "subnet-id", Values: []string{subnetID}})
	if err != nil {
		return nil, err
	}
	var out []netip.Prefix
	for _, e := range enis {
		for _, ip := range append([]string{e.PrimaryIP}, e.SecondaryIPs...) {
			if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
				out = append(out, netip.PrefixFrom(a, 32))
			}
		}
		out = append(out, e.IPv4Prefixes...)
	}
	return out, nil
}
