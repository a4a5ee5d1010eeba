package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The ENINode: one node's ENIs, as the operator manages them (spec) and
// the node agent configured them (status).

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
	// AppliedTags are the NodeENI's spec.tags and tag-policy tags the
	// operator wrote on the ENI (key to value), read only from the
	// ENINode, which only the operator writes: a key the NodeENI no
	// longer gives is removed from the ENI while it still holds this
	// value, and a value someone else rewrote is left to them. Empty on
	// ENIs of earlier versions until the operator next writes a tag.
	// +optional
	// +kubebuilder:validation:MaxProperties=50
	AppliedTags map[string]string `json:"appliedTags,omitempty"`
	// Selection is what the operator gave the ENI from its NodeENI's
	// subnet and security-group sources, read only from the ENINode:
	// drift repair keeps the ENI at these groups, and its zone at these
	// subnets, for as long as those sources in the spec are unchanged,
	// whatever a tag written since makes them resolve to. Empty on ENIs
	// of earlier versions until the operator next writes the entry.
	// +optional
	Selection *ENISelection `json:"selection,omitempty"`
}

// ENISelection pins an ENI to the subnets and security groups its
// NodeENI's spec resolved to when the operator created or last set it.
type ENISelection struct {
	// SpecHash is a digest of the NodeENI's subnet and security-group
	// fields (IDs, names, selectors) the pin was taken under; a spec with
	// other fields re-applies the current resolution.
	// +kubebuilder:validation:MaxLength=64
	SpecHash string `json:"specHash"`
	// SecurityGroups are the groups the ENI is kept at, sorted.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=32
	SecurityGroups []string `json:"securityGroups,omitempty"`
	// ZoneSubnets are the NodeENI's subnets in the ENI's zone, in device
	// index order: no other subnet of the zone joins them while the pin
	// holds.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=32
	ZoneSubnets []string `json:"zoneSubnets,omitempty"`
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

// PodAddress is an address the operator assigned on one of the node's
// ENIs for a Multus pod.
type PodAddress struct {
	// Address is the IPv4 or IPv6 address.
	// +kubebuilder:validation:MaxLength=45
	Address string `json:"address"`
	// ENIID is the ENI it is assigned on.
	// +kubebuilder:validation:MaxLength=32
	ENIID string `json:"eniID"`
	// Pod is the pod (namespace/name) it was assigned for.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	Pod string `json:"pod,omitempty"`
}

// CreateRecord is an ENI the operator created, or is about to create,
// for the node: the nonce its birth proof binds, written before the
// CreateNetworkInterface, and the ENI once EC2 showed it attached. Only
// the operator writes it, so an ENI showing a recorded nonce (and no
// other ENI showing it) is the operator's even when a crash or a lost
// answer hid which ENI the create made; the record goes with its ENI.
type CreateRecord struct {
	// Nonce is the tag eni-operator.io/nonce the ENI is created with.
	// +kubebuilder:validation:MaxLength=64
	Nonce string `json:"nonce"`
	// NodeENI is the NodeENI the ENI is for.
	// +kubebuilder:validation:MaxLength=253
	NodeENI string `json:"nodeENI"`
	// SubnetID is the subnet it is created in.
	// +kubebuilder:validation:MaxLength=32
	SubnetID string `json:"subnetID"`
	// DeviceIndex is the index it is created for.
	DeviceIndex int32 `json:"deviceIndex"`
	// Since is when the nonce was recorded.
	Since metav1.Time `json:"since"`
	// ENIID is the ENI showing the nonce, once EC2 showed it attached.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	ENIID string `json:"eniID,omitempty"`
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
	// PodAddresses are the addresses the operator assigned on the node's
	// ENIs for Multus pods (NodeENI multus.registerPodAddresses): the
	// record, written before each assignment and only by the operator,
	// that lets it unassign exactly the addresses it assigned and never
	// one someone else did.
	// +optional
	// +listType=map
	// +listMapKey=address
	// +kubebuilder:validation:MaxItems=4096
	PodAddresses []PodAddress `json:"podAddresses,omitempty"`
	// Creates record each ENI the operator created for the node, from
	// before its create until it is gone: the evidence, beside its proof,
	// that it is the operator's (attachments are a report of the ENIs).
	// +optional
	// +listType=map
	// +listMapKey=nonce
	// +kubebuilder:validation:MaxItems=128
	Creates []CreateRecord `json:"creates,omitempty"`
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
// is named after its node. The operator deletes it once it holds no
// entry and no record: it is not garbage-collected with the Node, since
// its records prove the node's ENIs the operator's until they are gone.
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
