package emulator

// handlerFor returns the implementation of an EC2 action.
func handlerFor(action string) (handler, bool) {
	switch action {
	case "DescribeNetworkInterfaces":
		return describeNetworkInterfaces, true
	case "CreateNetworkInterface":
		return createNetworkInterface, true
	case "DeleteNetworkInterface":
		return deleteNetworkInterface, true
	case "AttachNetworkInterface":
		return attachNetworkInterface, true
	case "DetachNetworkInterface":
		return detachNetworkInterface, true
	case "ModifyNetworkInterfaceAttribute":
		return modifyNetworkInterfaceAttribute, true
	case "AssignPrivateIpAddresses":
		return assignPrivateIPAddresses, true
	case "UnassignPrivateIpAddresses":
		return unassignPrivateIPAddresses, true
	case "CreateTags":
		return createTags, true
	case "DeleteTags":
		return deleteTags, true
	case "DescribeTags":
		return describeTags, true
	case "DescribeInstances":
		return describeInstances, true
	case "DescribeInstanceTypes":
		return describeInstanceTypes, true
	case "RunInstances":
		return runInstances, true
	case "TerminateInstances":
		return terminateInstances, true
	case "DescribeSubnets":
		return describeSubnets, true
	case "DescribeSecurityGroups":
		return describeSecurityGroups, true
	case "DescribeVpcs":
		return describeVpcs, true
	case "CreateVpc":
		return createVpc, true
	case "CreateSubnet":
		return createSubnet, true
	case "CreateSecurityGroup":
		return createSecurityGroup, true
	}
	return nil, false
}
