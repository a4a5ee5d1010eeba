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
)

// Attachment states reported in status.attachments[].status.
const (
	AttachmentCreated   = "created"   // the ENI exists, not attached yet (message says why)
	AttachmentAttached  = "attached"  // attached as the spec says
	AttachmentDetaching = "detaching" // being removed: detach requested
	AttachmentDeleting  = "deleting"  // detached, deletion pending
)

// Interface states reported by the node agent in status.interfaces[].state.
const (
	InterfaceConfigured = "Configured" // configured as the spec says
	InterfacePending    = "Pending"    // the interface has not appeared on the host yet
	InterfaceFailed     = "Failed"     // the agent could not configure it (message says why)
)

// NodeENISpec says which nodes get an ENI, in which subnets, with which
// security groups and at which device index. At least one subnet source
// (subnetID, subnetIDs, subnetName, subnetNames) and one security-group
// source (securityGroupIDs, securityGroupNames) are required; the sources
// of each kind are combined.
//
// +kubebuilder:validation:XValidation:rule="(has(self.subnetID) && size(self.subnetID) > 0) || (has(self.subnetName) && size(self.subnetName) > 0) || (has(self.subnetIDs) && size(self.subnetIDs) > 0) || (has(self.subnetNames) && size(self.subnetNames) > 0)",message="a subnet is required: set subnetID, subnetIDs, subnetName or subnetNames"
// +kubebuilder:validation:XValidation:rule="(has(self.securityGroupIDs) && size(self.securityGroupIDs) > 0) || (has(self.securityGroupNames) && size(self.securityGroupNames) > 0)",message="a security group is required: set securityGroupIDs or securityGroupNames"
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

// ENIAttachment is one ENI the operator manages for one node: an entry
// of ENINode spec.attachments, which the controller owns and the node
// agent reads (and, in NodeENI status.attachments, of earlier versions).
type ENIAttachment struct {
	// NodeENI is the NodeENI the ENI serves.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	NodeENI string `json:"nodeENI,omitempty"`
	// NodeID is the node's name.
	// +kubebuilder:validation:MaxLength=253
	NodeID string `json:"nodeID"`
	// InstanceID is the node's EC2 instance.
	// +kubebuilder:validation:MaxLength=32
	InstanceID string `json:"instanceID"`
	// ENIID is the ENI.
	// +kubebuilder:validation:MaxLength=32
	ENIID string `json:"eniID"`
	// AttachmentID is the EC2 attachment, when attached.
	// +optional
	AttachmentID string `json:"attachmentID,omitempty"`
	// SubnetID is the ENI's subnet.
	SubnetID string `json:"subnetID"`
	// SubnetCIDR is the subnet's IPv4 CIDR.
	// +optional
	SubnetCIDR string `json:"subnetCIDR,omitempty"`
	// MACAddress finds the interface on the host.
	// +optional
	MACAddress string `json:"macAddress,omitempty"`
	// PrivateIP is the ENI's primary private IPv4 address.
	// +optional
	PrivateIP string `json:"privateIP,omitempty"`
	// DeviceIndex is where the ENI is (or will be) attached.
	DeviceIndex int32 `json:"deviceIndex"`
	// DeleteOnTermination as set on the attachment.
	// +optional
	DeleteOnTermination bool `json:"deleteOnTermination,omitempty"`
	// MTU the agent is asked to set (from the spec).
	// +optional
	MTU int32 `json:"mtu,omitempty"`
	// Status is created, attached, detaching or deleting.
	Status string `json:"status"`
	// Message explains a failed or pending state.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// LastUpdated is when this entry last changed.
	// +optional
	LastUpdated metav1.Time `json:"lastUpdated,omitempty"`
}

// InterfaceStatus is what the node agent configured on its node for one
// ENI: an entry of ENINode status.interfaces. The agent owns these
// entries; the controller never writes them.
type InterfaceStatus struct {
	// ENIID is the ENI the interface belongs to.
	// +kubebuilder:validation:MaxLength=32
	ENIID string `json:"eniID"`
	// InterfaceName is the host's name for the interface.
	// +optional
	// +kubebuilder:validation:MaxLength=15
	InterfaceName string `json:"interfaceName,omitempty"`
	// MTU as configured.
	// +optional
	MTU int32 `json:"mtu,omitempty"`
	// Up tells whether the agent brought the link up.
	// +optional
	Up bool `json:"up,omitempty"`
	// DPDKBound tells whether the interface is bound to a DPDK driver.
	// +optional
	DPDKBound bool `json:"dpdkBound,omitempty"`
	// DPDKDriver is the driver it is bound to.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	DPDKDriver string `json:"dpdkDriver,omitempty"`
	// DPDKPCIAddress is the bound device's PCI address.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	DPDKPCIAddress string `json:"dpdkPCIAddress,omitempty"`
	// DPDKResourceName is the SR-IOV resource it is published as.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DPDKResourceName string `json:"dpdkResourceName,omitempty"`
	// State is the agent's summary: Configured, Pending (the interface
	// has not appeared on the host yet) or Failed.
	// +optional
	// +kubebuilder:validation:Enum=Configured;Pending;Failed
	State string `json:"state,omitempty"`
	// Message explains a failure. Bounded: the operator quotes it in the
	// InterfacesConfigured condition.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// LastUpdated is when the agent last wrote this entry.
	// +optional
	LastUpdated metav1.Time `json:"lastUpdated,omitempty"`
}

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
	// Conditions are Ready, Progressing, Degraded and
	// InterfacesConfigured.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
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

// ENINodeSpec is what the operator manages on one node.
type ENINodeSpec struct {
	// Attachments are the ENIs the operator manages on the node, for
	// every NodeENI, each naming its NodeENI. Written by the operator
	// (one server-side apply field manager per NodeENI); the node agent
	// configures the attached ones.
	// +optional
	// +listType=map
	// +listMapKey=eniID
	// +kubebuilder:validation:MaxItems=128
	Attachments []ENIAttachment `json:"attachments,omitempty"`
}

// ENINodeStatus is what the node's eni-agent configured.
type ENINodeStatus struct {
	// Interfaces is the agent's report, one entry per attached ENI of
	// spec.attachments. Written only by the agent of this node (an
	// admission policy checks its token's node name).
	// +optional
	// +listType=map
	// +listMapKey=eniID
	// +kubebuilder:validation:MaxItems=64
	Interfaces []InterfaceStatus `json:"interfaces,omitempty"`
}

// ENINode is one node's share of every NodeENI: the ENIs the operator
// manages on the node (spec, written by the operator) and what the
// node's eni-agent configured (status, written by that agent only). It
// is named after its node and deleted with it, as a kubelet's Lease is.
// One object per node keeps each write small however many nodes a
// NodeENI selects, and confines each agent to its own node's object.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="NodeENIs",type=string,JSONPath=`.spec.attachments[*].nodeENI`,description="NodeENIs with an ENI on the node"
// +kubebuilder:printcolumn:name="Attached",type=string,JSONPath=`.spec.attachments[?(@.status=="attached")].eniID`,description="ENIs attached to the node"
// +kubebuilder:printcolumn:name="Configured",type=string,JSONPath=`.status.interfaces[?(@.state=="Configured")].eniID`,description="ENIs the node's eni-agent configured"
// +kubebuilder:printcolumn:name="Failed",type=string,JSONPath=`.status.interfaces[?(@.state=="Failed")].eniID`,description="ENIs the eni-agent failed to configure (see status.interfaces[].message)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ENINode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ENINodeSpec   `json:"spec,omitempty"`
	Status ENINodeStatus `json:"status,omitempty"`
}

// ENINodeList is a list of ENINodes.
//
// +kubebuilder:object:root=true
type ENINodeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ENINode `json:"items"`
}

// NodeENIList is a list of NodeENIs.
//
// +kubebuilder:object:root=true
type NodeENIList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeENI `json:"items"`
}
