package awstypes

// InstanceLimits are the network limits of an instance type, as
// DescribeInstanceTypes' networkInfo gives them.
type InstanceLimits struct {
	// MaxENIs is how many network interfaces the type takes in all.
	MaxENIs int
	// IPv4PerInterface and IPv6PerInterface bound an interface's
	// addresses (IPv4: the primary included).
	IPv4PerInterface, IPv6PerInterface int
	IPv6Supported, EFASupported        bool
	// NetworkCards are the type's network cards, by index; a type that
	// reports none has one card (index 0) taking MaxENIs.
	NetworkCards []NetworkCard
}

// NetworkCard is one network card of an instance type.
type NetworkCard struct {
	Index, MaxENIs int
}

// Card returns the card with an index, and whether the type has it.
func (l InstanceLimits) Card(index int) (NetworkCard, bool) {
	if len(l.NetworkCards) == 0 && index == 0 {
		return NetworkCard{Index: 0, MaxENIs: l.MaxENIs}, true
	}
	for _, c := range l.NetworkCards {
		if c.Index == index {
			return c, true
		}
	}
	return NetworkCard{}, false
}
