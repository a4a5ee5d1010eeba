package emulator

// handlers maps each EC2 action the emulator implements to its handler.
var handlers = map[string]handler{
	"DescribeNetworkInterfaces":         describeNetworkInterfaces,
	"CreateNetworkInterface":            createNetworkInterface,
	"DeleteNetworkInterface":            deleteNetworkInterface,
	"AttachNetworkInterface":            attachNetworkInterface,
	"DetachNetworkInterface":            detachNetworkInterface,
	"ModifyNetworkInterfaceAttribute":   modifyNetworkInterfaceAttribute,
	"DescribeNetworkInterfaceAttribute": describeNetworkInterfaceAttribute,
	"AssignPrivateIpAddresses":          assignPrivateIPAddresses,
	"UnassignPrivateIpAddresses":        unassignPrivateIPAddresses,
	"AssignIpv6Addresses":               assignIPv6Addresses,
	"UnassignIpv6Addresses":             unassignIPv6Addresses,
	"CreateTags":                        createTags,
	"DeleteTags":                        deleteTags,
	"DescribeTags":                      describeTags,
	"DescribeInstances":                 describeInstances,
	"DescribeInstanceTypes":             describeInstanceTypes,
	"RunInstances":                      runInstances,
	"TerminateInstances":                terminateInstances,
	"DescribeSubnets":                   describeSubnets,
	"DescribeSecurityGroups":            describeSecurityGroups,
	"DescribeVpcs":                      describeVpcs,
	"CreateVpc":                         createVpc,
	"CreateSubnet":                      createSubnet,
	"CreateSecurityGroup":               createSecurityGroup,
	"CreateSubnetCidrReservation":       createSubnetCidrReservation,
	"GetSubnetCidrReservations":         getSubnetCidrReservations,
	"DeleteSubnetCidrReservation":       deleteSubnetCidrReservation,
}

// handlerFor returns the implementation of an EC2 action.
func handlerFor(action string) (handler, bool) {
	h, ok := handlers[action]
	return h, ok
}
