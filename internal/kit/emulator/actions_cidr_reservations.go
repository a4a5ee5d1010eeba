package emulator

import (
	"cmp"
	"net/netip"
	"slices"
)

// Subnet CIDR reservations: CreateSubnetCidrReservation,
// GetSubnetCidrReservations and DeleteSubnetCidrReservation. A
// reservation is a CIDR inside its subnet's CIDR of the same family,
// overlapping no other reservation of the subnet. EC2 never picks an
// address of a reservation automatically; explicit ones may be named.

type cidrReservation struct {
	resource
	subnetID    string
	cidr        netip.Prefix
	kind        string // explicit or prefix
	description string
}

type xCidrReservation struct {
	ID          string `xml:"subnetCidrReservationId"`
	SubnetID    string `xml:"subnetId"`
	CIDR        string `xml:"cidr"`
	Type        string `xml:"reservationType"`
	OwnerID     string `xml:"ownerId"`
	Description string `xml:"description,omitempty"`
	Tags        []xTag `xml:"tagSet>item"`
}

type createSubnetCidrReservationResponse struct {
	respMeta
	Reservation xCidrReservation `xml:"subnetCidrReservation"`
}

type deleteSubnetCidrReservationResponse struct {
	respMeta
	Deleted xCidrReservation `xml:"deletedSubnetCidrReservation"`
}

type getSubnetCidrReservationsResponse struct {
	respMeta
	IPv4 []xCidrReservation `xml:"subnetIpv4CidrReservationSet>item"`
	IPv6 []xCidrReservation `xml:"subnetIpv6CidrReservationSet>item"`
}

func (w *world) xCidrReservation(r *cidrReservation) xCidrReservation {
	return xCidrReservation{ID: r.id, SubnetID: r.subnetID, CIDR: r.cidr.String(), Type: r.kind, OwnerID: w.accountID,
		Description: r.description, Tags: xTags(r.tags)}
}

func createSubnetCidrReservation(w *world, p params, _ callEnv) (response, *apiError) {
	subnetID, err := p.required("SubnetId")
	if err != nil {
		return nil, err
	}
	s, err := lookup(w.subnets, "subnet", subnetID)
	if err != nil {
		return nil, err
	}
	cidr, err := w.checkReservationCIDR(s, p)
	if err != nil {
		return nil, err
	}
	kind, err := p.required("ReservationType")
	if err != nil {
		return nil, err
	}
	if kind != "explicit" && kind != "prefix" {
		return nil, apiErr("InvalidParameterValue", "Value (%s) for parameter reservationType is invalid.", kind)
	}
	tags, err := p.tagSpecifications("subnet-cidr-reservation")
	if err != nil {
		return nil, err
	}
	r := &cidrReservation{resource: w.newResource(w.newID("scr"), tags), subnetID: s.id, cidr: cidr, kind: kind,
		description: p.get("Description")}
	w.reservations[r.id] = r
	return &createSubnetCidrReservationResponse{Reservation: w.xCidrReservation(r)}, nil
}

// checkReservationCIDR parses Cidr: a canonical CIDR inside the subnet's
// CIDR of its family that overlaps none of the subnet's reservations.
func (w *world) checkReservationCIDR(s *subnet, p params) (netip.Prefix, *apiError) {
	raw, err := p.required("Cidr")
	if err != nil {
		return netip.Prefix{}, err
	}
	cidr, perr := netip.ParsePrefix(raw)
	if perr != nil || cidr.Masked() != cidr {
		return netip.Prefix{}, apiErr("InvalidParameterValue", "Value (%s) for parameter cidr is invalid.", raw)
	}
	within := s.cidr
	if cidr.Addr().Is6() {
		within = s.ipv6
	}
	if !within.IsValid() || !within.Contains(cidr.Addr()) || cidr.Bits() < within.Bits() {
		return netip.Prefix{}, apiErr("InvalidParameterValue", "The CIDR %s is not within the CIDR ranges of subnet %s.", raw, s.id)
	}
	for _, r := range w.reservationsOf(s.id) {
		if r.cidr.Overlaps(cidr) {
			return netip.Prefix{}, apiErr("InvalidParameterValue",
				"The CIDR %s overlaps the existing subnet CIDR reservation %s (%s).", raw, r.id, r.cidr)
		}
	}
	return cidr, nil
}

// getSubnetCidrReservations lists a subnet's reservations, IPv4 and IPv6
// apart, filtered by reservationType, subnet-cidr-reservation-id, owner-id
// and tags.
func getSubnetCidrReservations(w *world, p params, _ callEnv) (response, *apiError) {
	subnetID, err := p.required("SubnetId")
	if err != nil {
		return nil, err
	}
	if _, err := lookup(w.subnets, "subnet", subnetID); err != nil {
		return nil, err
	}
	filters, err := p.filters()
	if err != nil {
		return nil, err
	}
	resp := &getSubnetCidrReservationsResponse{}
	for _, r := range w.reservationsOf(subnetID) {
		fields := func(name string) ([]string, bool) {
			switch name {
			case "reservationType":
				return []string{r.kind}, true
			case "subnet-cidr-reservation-id":
				return []string{r.id}, true
			case "subnet-id":
				return []string{r.subnetID}, true
			case "owner-id":
				return []string{w.accountID}, true
			}
			return tagFields(r.tags, name)
		}
		ok, err := matchAll(filters, fields)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if r.cidr.Addr().Is4() {
			resp.IPv4 = append(resp.IPv4, w.xCidrReservation(r))
		} else {
			resp.IPv6 = append(resp.IPv6, w.xCidrReservation(r))
		}
	}
	return resp, nil
}

func deleteSubnetCidrReservation(w *world, p params, _ callEnv) (response, *apiError) {
	id, err := p.required("SubnetCidrReservationId")
	if err != nil {
		return nil, err
	}
	r, err := lookup(w.reservations, "scr", id)
	if err != nil {
		return nil, err
	}
	delete(w.reservations, id)
	return &deleteSubnetCidrReservationResponse{Deleted: w.xCidrReservation(r)}, nil
}

// reservationsOf lists a subnet's reservations in creation order.
func (w *world) reservationsOf(subnetID string) []*cidrReservation {
	var out []*cidrReservation
	for _, r := range w.reservations {
		if r.subnetID == subnetID {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *cidrReservation) int { return cmp.Compare(a.seq, b.seq) })
	return out
}

// inReservation reports whether automatic assignment must skip a: it
// lies in a reservation of the subnet. Single addresses are never picked
// from any reservation.
func (w *world) inReservation(s *subnet, a netip.Addr) bool {
	for _, r := range w.reservations {
		if r.subnetID == s.id && r.cidr.Contains(a) {
			return true
		}
	}
	return false
}

// overlapsExplicitReservation reports whether an automatically delegated
// prefix must skip pf: it overlaps an explicit reservation of the subnet.
func (w *world) overlapsExplicitReservation(s *subnet, pf netip.Prefix) bool {
	for _, r := range w.reservations {
		if r.subnetID == s.id && r.kind == "explicit" && r.cidr.Overlaps(pf) {
			return true
		}
	}
	return false
}
