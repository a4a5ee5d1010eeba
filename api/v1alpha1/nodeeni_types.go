package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxDeviceIndex is the highest device index any EC2 instance type
// accepts: the largest types take 64 network interfaces (indexes 0-63).
// Whether a given node takes the index is checked against its own type
// at reconcile time.
const MaxDeviceIndex = 63

// Condition types of a NodeENI.
const (
	// ConditionReady is True when every matching node has all its ENIs
	// attached as the spec says.
	ConditionReady = "Ready"
	// ConditionProgressing is True while ENIs are being created, attached,
	// detached or deleted.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when some node cannot get its ENI (instance
	// full, device index taken, subnet or security group not found, ...);
	// its message names the nodes and what to do.
	ConditionDegraded = "Degraded"
	// ConditionInterfacesConfigured aggregates the node agents' reports
	// (ENINode status.interfaces) over the attached ENIs: True when the agent of
	// every node configured all its attached ENIs, False when one failed
	// or has not been reported configured yet, Unknown when no ENI is
	// attached. It does not affect Ready, which is about EC2 only.
	ConditionInterfacesConfigured = "InterfacesConfigured"
	// ConditionPodAddressesRegistered is True when every Multus pod
	// address on this NodeENI's interfaces is assigned on its ENI (with
	// multus.registerPodAddresses); its message names the pods refused and
	// why (address limit, address taken, not in the subnet).
	ConditionPodAddressesRegistered = "PodAddressesRegistered"
	// ConditionPodAddressesReserved is True when every subnet of a
	// NodeENI with multus.podAddressReservation holds its pods' range
	// reservation; its message says which could not be made and why.
	ConditionPodAddressesReserved = "PodAddressesReserved"
	// ConditionAttachmentDefinitionsReady is True when every
	// NetworkAttachmentDefinition multus.attachmentDefinition asks for is
	// written as it says; its message names those it could not write.
	ConditionAttachmentDefinitionsReady = "AttachmentDefinitionsReady"
	// ConditionSelectionChanged is True when the subnet and security-group
	// sources now resolve to something other than what the running ENIs
	// were given (a subnet or group tagged, untagged or renamed since):
	// its message names the new and the dropped subnets and groups. The
	// running ENIs keep theirs until a subnet or security-group field of
	// the spec changes.
	ConditionSelectionChanged = "SelectionChanged"
	// ConditionOwnershipVerified is True when every ENI carrying the
	// NodeENI's ownership tags is proven the operator's. False names the
	// ENIs left alone and why, or the proofs being restored (a removed
	// proof tag, a lost or replaced key Secret), with the recovery.
	ConditionOwnershipVerified = "OwnershipVerified"
)

// NodeENISpec says which nodes get an ENI, in which subnets, with which
// security groups and at which device index. At least one subnet source
// (subnetID, subnetIDs, subnetName, subnetNames, subnetSelector) and one
// security-group source (securityGroupIDs, securityGroupNames,
// securityGroupSelector) are required; the sources of each kind are
// combined.
//
// +kubebuilder:validation:XValidation:rule="(has(self.subnetID) && size(self.subnetID) > 0) || (has(self.subnetName) && size(self.subnetName) > 0) || (has(self.subnetIDs) && size(self.subnetIDs) > 0) || (has(self.subnetNames) && size(self.subnetNames) > 0) || (has(self.subnetSelector) && size(self.subnetSelector) > 0)",message="a subnet is required: set subnetID, subnetIDs, subnetName, subnetNames or subnetSelector"
// +kubebuilder:validation:XValidation:rule="(has(self.securityGroupIDs) && size(self.securityGroupIDs) > 0) || (has(self.securityGroupNames) && size(self.securityGroupNames) > 0) || (has(self.securityGroupSelector) && size(self.securityGroupSelector) > 0)",message="a security group is required: set securityGroupIDs, securityGroupNames or securityGroupSelector"
// +kubebuilder:validation:XValidation:rule="!(has(self.secondaryPrivateIPv4Count) && self.secondaryPrivateIPv4Count > 0 && has(self.ipv4PrefixCount) && self.ipv4PrefixCount > 0)",message="EC2 takes secondary IPv4 addresses or IPv4 prefixes on one ENI, not both: set secondaryPrivateIPv4Count or ipv4PrefixCount"
// +kubebuilder:validation:XValidation:rule="!(has(self.ipv6AddressCount) && self.ipv6AddressCount > 0 && has(self.ipv6PrefixCount) && self.ipv6PrefixCount > 0)",message="EC2 takes IPv6 addresses or IPv6 prefixes on one ENI, not both: set ipv6AddressCount or ipv6PrefixCount"
// +kubebuilder:validation:XValidation:rule="!has(self.multus) || !has(self.multus.attachmentDefinition) || (has(self.interfaceName) && size(self.interfaceName) > 0)",message="multus.attachmentDefinition names the host interface: set interfaceName"
// +kubebuilder:validation:XValidation:rule="!has(self.multus) || !has(self.enableDPDK) || !self.enableDPDK",message="an interface bound to DPDK has no kernel interface for Multus: unset enableDPDK or multus"
// +kubebuilder:validation:XValidation:rule="!has(self.interfaceType) || self.interfaceType != 'efa-only' || !has(self.multus)",message="an efa-only interface has no IP addresses for Multus: use interfaceType efa or unset multus"
type NodeENISpec struct {
	// NodeSelector selects the nodes that get the ENIs, by label. An empty
	// selector selects every node.
	NodeSelector map[string]string `json:"nodeSelector"`

	// SubnetID is a subnet to create ENIs in.
	// +optional
	// +kubebuilder:validation:Pattern=`^subnet-[0-9a-f]{8,17}$`
	SubnetID string `json:"subnetID,omitempty"`

	// SubnetIDs are subnets to create ENIs in. A node gets one ENI in each
	// listed subnet of its availability zone.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Pattern=`^subnet-[0-9a-f]{8,17}$`
	SubnetIDs []string `json:"subnetIDs,omitempty"`

	// SubnetName is the Name tag of a subnet to create ENIs in, looked up
	// in the cluster's VPC.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	SubnetName string `json:"subnetName,omitempty"`

	// SubnetNames are Name tags of subnets to create ENIs in, looked up in
	// the cluster's VPC.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	SubnetNames []string `json:"subnetNames,omitempty"`

	// SubnetSelector selects subnets of the cluster's VPC by tags or ID,
	// as Karpenter's EC2NodeClass subnetSelectorTerms do: a subnet is
	// selected when any term matches it. Like subnetNames, a node gets
	// one ENI in each selected subnet of its availability zone; the
	// chosen subnets are in status.subnets, and nodes of a zone with none
	// are named in the Degraded condition.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	SubnetSelector []SubnetSelectorTerm `json:"subnetSelector,omitempty"`

	// SecurityGroupSelector selects security groups of the cluster's VPC
	// by tags, ID or name: every group any term matches is put on the
	// ENIs (status.securityGroups lists them).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	SecurityGroupSelector []SecurityGroupSelectorTerm `json:"securityGroupSelector,omitempty"`

	// SecurityGroupIDs are security groups of the ENIs.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Pattern=`^sg-[0-9a-f]{8,17}$`
	SecurityGroupIDs []string `json:"securityGroupIDs,omitempty"`

	// SecurityGroupNames are group names of security groups of the ENIs,
	// looked up in the cluster's VPC.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	SecurityGroupNames []string `json:"securityGroupNames,omitempty"`

	// DeviceIndex is the device index of the ENI on the instance (index 0
	// is the primary ENI). With several subnets in one availability zone
	// the ENIs take consecutive indexes from this one, in spec order.
	// Changing it replaces the ENIs.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=63
	DeviceIndex int32 `json:"deviceIndex,omitempty"`

	// DeleteOnTermination makes EC2 delete the ENI with its instance.
	// +optional
	// +kubebuilder:default=true
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`

	// Description of the ENIs.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Description string `json:"description,omitempty"`

	// MTU the node agent sets on the interface; the system default when
	// unset.
	// +optional
	// +kubebuilder:validation:Minimum=576
	// +kubebuilder:validation:Maximum=9001
	MTU int32 `json:"mtu,omitempty"`

	// EnableDPDK makes the node agent bind the interface to a DPDK driver.
	// +optional
	EnableDPDK bool `json:"enableDPDK,omitempty"`

	// DPDKDriver is the kernel driver the interface is bound to
	// (the agent's default is vfio-pci).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9_-]+$`
	DPDKDriver string `json:"dpdkDriver,omitempty"`

	// DPDKResourceName is the SR-IOV device plugin resource the bound
	// interface is published as, e.g. intel.com/sriov_dpdk.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9.-]+/[a-zA-Z0-9_.-]+$`
	DPDKResourceName string `json:"dpdkResourceName,omitempty"`

	// DPDKPCIAddress selects the device to bind by PCI address
	// (domain:bus:device.function, e.g. 0000:00:06.0) instead of by MAC.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`
	DPDKPCIAddress string `json:"dpdkPCIAddress,omitempty"`

	// InterfaceName is the name the node agent gives the interface on the
	// host, so network configurations can name it regardless of the
	// kernel's ethN/ensN naming. With several ENIs per node, the one at
	// deviceIndex gets the name as is and the others get the offset from
	// deviceIndex appended (multus, multus1, ...). Unset, the kernel's
	// name is kept.
	// +optional
	// +kubebuilder:validation:MaxLength=13
	// +kubebuilder:validation:Pattern=`^[a-zA-Z][a-zA-Z0-9_-]*$`
	InterfaceName string `json:"interfaceName,omitempty"`

	// SecondaryPrivateIPv4Count is how many secondary private IPv4
	// addresses EC2 assigns each ENI at creation (the instance type's
	// addresses per interface, less the primary, bound it). Raising it
	// assigns the difference to existing ENIs; lowering it takes nothing
	// back from a running interface.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=49
	SecondaryPrivateIPv4Count int32 `json:"secondaryPrivateIPv4Count,omitempty"`

	// IPv4PrefixCount is how many /28 IPv4 prefixes EC2 delegates to each
	// ENI at creation (Nitro instances only).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=49
	IPv4PrefixCount int32 `json:"ipv4PrefixCount,omitempty"`

	// IPv6AddressCount is how many IPv6 addresses EC2 assigns each ENI at
	// creation; the subnet needs an IPv6 CIDR.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=50
	IPv6AddressCount int32 `json:"ipv6AddressCount,omitempty"`

	// IPv6PrefixCount is how many /80 IPv6 prefixes EC2 delegates to each
	// ENI at creation; the subnet needs an IPv6 CIDR.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=50
	IPv6PrefixCount int32 `json:"ipv6PrefixCount,omitempty"`

	// NetworkCardIndex is the network card the ENIs attach to, on
	// instance types with several (their count is checked against
	// DescribeInstanceTypes). Changing it replaces the ENIs.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=15
	NetworkCardIndex int32 `json:"networkCardIndex,omitempty"`

	// SourceDestCheck, when false, lets the ENIs send and receive traffic
	// not addressed to them (routers, NAT, CNFs). Unset keeps EC2's
	// default (true). Kept as the spec says when someone changes it.
	// +optional
	SourceDestCheck *bool `json:"sourceDestCheck,omitempty"`

	// InterfaceType is interface (the default), efa (an Elastic Fabric
	// Adapter with IP) or efa-only, where the instance type supports EFA.
	// Changing it replaces the ENIs.
	// +optional
	// +kubebuilder:validation:Enum=interface;efa;efa-only
	InterfaceType string `json:"interfaceType,omitempty"`

	// Multus makes the ENIs a working secondary network for Multus pods:
	// their addresses registered on the ENIs and attachment definitions
	// generated. Unset, the operator does neither.
	// +optional
	Multus *MultusSpec `json:"multus,omitempty"`

	// Tags are AWS tags put on the ENIs besides the operator's own. Keys
	// with a reserved prefix (the operator's own, AWS's, and those other
	// AWS and Kubernetes components act on; internal/tagkeys lists them
	// with the reasons) are refused, in any letter case. Keys and values
	// may not hold control characters (U+0000-U+001F, U+007F-U+009F) and
	// keys may not begin or end with white space: the character rule of
	// internal/tagkeys (CheckTag), which the controller applies too.
	// +optional
	// +kubebuilder:validation:MaxProperties=40
	// +kubebuilder:validation:XValidation:rule=`self.all(k, !k.matches(r'\p{Cc}'))`,message="tag keys may not hold control characters (U+0000-U+001F, U+007F-U+009F): remove them"
	// +kubebuilder:validation:XValidation:rule=`self.all(k, !k.matches(r'^\p{Z}|\p{Z}$'))`,message="tag keys may not begin or end with white space: remove it"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) >= 1 && size(k) <= 127 && size(self[k]) <= 256)",message="tag keys must be 1-127 characters and values at most 256"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !['eni-operator.io/', 'eni-tagger.io/', 'aws:', 'kubernetes.io/', 'k8s.io/', 'node.k8s.amazonaws.com/', 'cluster.k8s.amazonaws.com/', 'cni.networking.k8s.aws/', 'vpcresources.k8s.aws/', 'eks:', 'eks-cluster-name', 'karpenter.sh/', 'karpenter.k8s.aws/', 'elbv2.k8s.aws/', 'service.k8s.aws/', 'ingress.k8s.aws/'].exists(p, k.lowerAscii().startsWith(p)))",message="tag keys starting with a reserved prefix (eni-operator.io/, eni-tagger.io/, aws:, kubernetes.io/, k8s.io/, node.k8s.amazonaws.com/, cluster.k8s.amazonaws.com/, cni.networking.k8s.aws/, vpcresources.k8s.aws/, eks:, eks-cluster-name, karpenter.sh/, karpenter.k8s.aws/, elbv2.k8s.aws/, service.k8s.aws/, ingress.k8s.aws/) are not allowed: the operator or another AWS/Kubernetes component acts on them"
	Tags map[string]TagValue `json:"tags,omitempty"`
}

// A type of its own carries the value's rules: a rule over the whole map
// cannot afford to read values of unbounded length (CEL's cost estimate
// is over the API server's budget), and controller-gen cannot generate
// code for an alias.

// TagValue is the value of a tag: at most 256 characters of text
// without control characters.
// +kubebuilder:validation:MaxLength=256
// +kubebuilder:validation:XValidation:rule=`!self.matches(r'\p{Cc}')`,message="tag values may not hold control characters (U+0000-U+001F, U+007F-U+009F): remove them"
type TagValue string

// NodeENIStatus is the observed state of a NodeENI.
type NodeENIStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// DesiredNodes counts the nodes the selector matches. Defaulted to 0
	// so the Desired column shows 0 rather than nothing: a merge patch
	// never sends a count that stays 0.
	// +optional
	// +kubebuilder:default=0
	DesiredNodes int32 `json:"desiredNodes"`
	// ReadyNodes counts the matching nodes with all their ENIs attached.
	// Defaulted to 0 so the Ready column shows 0 rather than nothing.
	// +optional
	// +kubebuilder:default=0
	ReadyNodes int32 `json:"readyNodes"`
	// Attachments are the ENIs as earlier versions and
	// aws-multi-eni-controller recorded them, which grew with the nodes
	// past what etcd stores. Deprecated: each node's ENIs are in its
	// ENINode. The operator reads these entries once, to prove and adopt
	// the ENIs they name, and then clears them.
	// +optional
	// +listType=map
	// +listMapKey=eniID
	Attachments []ENIAttachment `json:"attachments,omitempty"`
	// Subnets are the subnets the spec resolves to (IDs, names and
	// selectors), with their zones.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=256
	Subnets []ResolvedSubnet `json:"subnets,omitempty"`
	// SecurityGroups are the security groups the spec resolves to.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	SecurityGroups []string `json:"securityGroups,omitempty"`
	// PodAddressReservations are the pods' ranges reserved for
	// multus.podAddressReservation, one per subnet.
	// +optional
	// +listType=map
	// +listMapKey=subnetID
	// +kubebuilder:validation:MaxItems=256
	PodAddressReservations []PodAddressReservationStatus `json:"podAddressReservations,omitempty"`
	// Conditions are Ready, Progressing, Degraded, InterfacesConfigured,
	// SelectionChanged and, with multus, PodAddressesRegistered,
	// PodAddressesReserved and AttachmentDefinitionsReady. Each condition type has one writer.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ResolvedSubnet is a subnet a NodeENI's spec selects.
type ResolvedSubnet struct {
	// ID of the subnet.
	ID string `json:"id"`
	// Zone is its availability zone.
	Zone string `json:"zone"`
	// CIDR is its IPv4 CIDR.
	// +optional
	CIDR string `json:"cidr,omitempty"`
	// IPv6CIDR is its IPv6 CIDR, when it has one.
	// +optional
	IPv6CIDR string `json:"ipv6CIDR,omitempty"`
}

// NodeENI gives every node matching its selector an ENI in each of its
// subnets that lies in the node's availability zone.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=neni
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyNodes`,description="Matching nodes with all their ENIs attached"
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredNodes`,description="Nodes the selector matches"
// +kubebuilder:printcolumn:name="Index",type=integer,JSONPath=`.spec.deviceIndex`,description="Device index of the ENIs",priority=1
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Configured",type=string,JSONPath=`.status.conditions[?(@.type=="InterfacesConfigured")].reason`,description="The node agents' aggregate: Configured, Pending, InterfaceFailed or NoAttachments"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeENI struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeENISpec   `json:"spec"`
	Status NodeENIStatus `json:"status,omitempty"`
}

// NodeENIList is a list of NodeENIs.
//
// +kubebuilder:object:root=true
type NodeENIList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeENI `json:"items"`
}
