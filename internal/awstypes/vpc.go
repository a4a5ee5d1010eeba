package awstypes

// Subnet is a subnet as the operator sees it.
type Subnet struct {
	ID               string
	VPCID            string
	AvailabilityZone string
	CIDR             string
	// IPv6CIDR is the subnet's associated IPv6 block; empty when none.
	IPv6CIDR string
	Tags     map[string]string
}

// SecurityGroup is a security group as the operator sees it.
type SecurityGroup struct {
	ID    string
	Name  string
	VPCID string
	Tags  map[string]string
}
