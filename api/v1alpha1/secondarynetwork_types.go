package v1alpha1

// SubnetSelectorTerm selects subnets by tags or by ID: exactly one of
// the two.
//
// +kubebuilder:validation:XValidation:rule="(has(self.tags) && size(self.tags) > 0) != (has(self.id) && size(self.id) > 0)",message="a subnet selector term sets tags or id, exactly one"
type SubnetSelectorTerm struct {
	// Tags a subnet must all carry; the value "*" matches any value.
	// +optional
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) >= 1 && size(k) <= 127)",message="tag keys must be 1-127 characters"
	Tags map[string]TagValue `json:"tags,omitempty"`
	// ID is a subnet ID.
	// +optional
	// +kubebuilder:validation:Pattern=`^subnet-[0-9a-f]{8,17}$`
	ID string `json:"id,omitempty"`
}

// SecurityGroupSelectorTerm selects security groups by tags, by ID or
// by group name: exactly one of the three.
//
// +kubebuilder:validation:XValidation:rule="[has(self.tags) && size(self.tags) > 0, has(self.id) && size(self.id) > 0, has(self.name) && size(self.name) > 0].filter(x, x).size() == 1",message="a security group selector term sets tags, id or name, exactly one"
type SecurityGroupSelectorTerm struct {
	// Tags a group must all carry; the value "*" matches any value.
	// +optional
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) >= 1 && size(k) <= 127)",message="tag keys must be 1-127 characters"
	Tags map[string]TagValue `json:"tags,omitempty"`
	// ID is a security group ID.
	// +optional
	// +kubebuilder:validation:Pattern=`^sg-[0-9a-f]{8,17}$`
	ID string `json:"id,omitempty"`
	// Name is a security group's name.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Name string `json:"name,omitempty"`
}

// MultusSpec makes a NodeENI's interfaces a secondary network for
// Multus.
type MultusSpec struct {
	// RegisterPodAddresses makes the operator assign each Multus pod's
	// addresses on this NodeENI's interface (found by the MAC address in
	// the pod's k8s.v1.cni.cncf.io/network-status) as secondary private
	// IPv4 / IPv6 addresses of the node's ENI, so the VPC delivers their
	// traffic, and unassign them when the pod goes.
	// +optional
	RegisterPodAddresses bool `json:"registerPodAddresses,omitempty"`
	// AttachmentDefinition, when set, makes the operator write a
	// NetworkAttachmentDefinition for the interfaces in each listed
	// namespace and keep it in sync.
	// +optional
	AttachmentDefinition *AttachmentDefinitionSpec `json:"attachmentDefinition,omitempty"`
	// PodAddressReservation asks for the pods' IPv4 range as a subnet
	// CIDR reservation in each of the NodeENI's subnets: EC2 then places
	// no ENI address in it, and the generated definitions hand out only
	// its addresses.
	// +optional
	PodAddressReservation *PodAddressReservationSpec `json:"podAddressReservation,omitempty"`
}

// PodAddressReservationSpec sizes the pods' range in each subnet.
type PodAddressReservationSpec struct {
	// PrefixLength of the IPv4 reservation, /16 to /28 (EC2's bounds for
	// a subnet CIDR; a /28 is 16 addresses).
	// +kubebuilder:validation:Minimum=16
	// +kubebuilder:validation:Maximum=28
	PrefixLength int32 `json:"prefixLength"`
}

// PodAddressReservationStatus is one subnet's reservation of the pods'
// range, as the operator created it.
type PodAddressReservationStatus struct {
	// SubnetID is the subnet the reservation is in.
	// +kubebuilder:validation:MaxLength=64
	SubnetID string `json:"subnetID"`
	// ID is the reservation's (scr-...).
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id"`
	// CIDR is the range reserved.
	// +kubebuilder:validation:MaxLength=64
	CIDR string `json:"cidr"`
}

// AttachmentDefinitionSpec says which NetworkAttachmentDefinitions the
// operator writes for a NodeENI: one per namespace and subnet, named
// after the NodeENI (and the subnet, when it has several), never over one
// it did not write.
type AttachmentDefinitionSpec struct {
	// Name of the definitions; the NodeENI's name when unset. With several
	// subnets, each definition is <name>-<subnet ID>.
	// +optional
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name,omitempty"`
	// Namespaces to write the definitions in.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespaces []string `json:"namespaces"`
	// Type is the CNI plugin: ipvlan (the default; pods share the ENI's
	// MAC, which the VPC accepts), macvlan (pods get their own MAC, which
	// the VPC drops unless source/destination check and MAC rules allow)
	// or host-device (the whole interface moves into one pod).
	// +optional
	// +kubebuilder:default=ipvlan
	// +kubebuilder:validation:Enum=ipvlan;macvlan;host-device
	Type string `json:"type,omitempty"`
	// Mode of ipvlan (l2, l3, l3s; l2 when unset) or macvlan (bridge,
	// private, vepa, passthru; bridge when unset).
	// +optional
	// +kubebuilder:validation:Enum=l2;l3;l3s;bridge;private;vepa;passthru
	Mode string `json:"mode,omitempty"`
	// IPAM is whereabouts (the default: addresses from the subnet's CIDR
	// less the five AWS reserves) or static (each pod names its address
	// in its network selection).
	// +optional
	// +kubebuilder:default=whereabouts
	// +kubebuilder:validation:Enum=whereabouts;static
	IPAM string `json:"ipam,omitempty"`
	// Exclude are CIDRs whereabouts must not hand out (e.g. the part of
	// the subnet the ENIs' own addresses come from).
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="self.all(c, isCIDR(c))",message="exclude holds CIDRs such as 10.0.1.0/28 or 2600:1f18::/120"
	Exclude []string `json:"exclude,omitempty"`
}
