package emulator

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// Options configure an Emulator at construction. Everything here except
// Region and AccountID can also be changed at runtime through Configure.
type Options struct {
	// Region is reported in availability zones and ARNs. Default us-east-1.
	Region string
	// AccountID is the owner of every resource. Default 123456789012.
	AccountID string
	// Throttling turns on AWS's per-action token buckets.
	Throttling bool
	// Latency is added to every EC2 call.
	Latency time.Duration
	// FaultRate is the fraction of EC2 calls answered with 500 InternalError.
	FaultRate float64
	// DetachDelay is how long a detached ENI stays "detaching" before it is
	// "available". Default 500ms. AWS takes seconds; tests want less.
	DetachDelay time.Duration
	// VisibilityDelay models EC2's eventual consistency: for this long
	// after CreateNetworkInterface, the new ENI is unknown to every other
	// call (NotFound by ID, absent from Describe results), as EC2 may
	// answer right after a create. A create repeated with the same
	// ClientToken still answers it. Default 0: visible at once.
	VisibilityDelay time.Duration
	// TagDelay, AttachDelay and DeleteDelay model EC2's eventual
	// consistency for other writes (consistency.go): Describe calls show
	// an ENI's tags from before a CreateTags/DeleteTags, an attachment
	// "attaching", and a deleted ENI, for that long. Default 0: at once.
	TagDelay, AttachDelay, DeleteDelay time.Duration
	// IgnoreClientToken makes CreateNetworkInterface ignore ClientToken,
	// as moto does and as EC2 does once its idempotency window has passed:
	// every call makes a new ENI, none is refused IdempotentParameterMismatch,
	// and the token is still echoed in the answer.
	IgnoreClientToken bool
	// Seed makes generated IDs, MACs and fault choices reproducible.
	Seed int64
}

// Config is the runtime-adjustable part of the emulator (admin API
// POST /_emulator/config). Nil fields leave the current value alone.
// Faults, Buckets and Denied replace the current set when non-nil, so an
// empty (non-nil) map or list clears it. In JSON, an absent or null field
// is nil and {} or [] is empty; AdminClient.Configure sends nil as null.
type Config struct {
	Throttling  *bool     `json:"throttling,omitempty"`
	Latency     *Duration `json:"latency,omitempty"`
	FaultRate   *float64  `json:"faultRate,omitempty"`
	DetachDelay *Duration `json:"detachDelay,omitempty"`
	// VisibilityDelay: see Options.VisibilityDelay.
	VisibilityDelay *Duration `json:"visibilityDelay,omitempty"`
	// TagDelay, AttachDelay, DeleteDelay: see Options.TagDelay.
	TagDelay    *Duration `json:"tagDelay,omitempty"`
	AttachDelay *Duration `json:"attachDelay,omitempty"`
	DeleteDelay *Duration `json:"deleteDelay,omitempty"`
	// IgnoreClientToken: see Options.IgnoreClientToken.
	IgnoreClientToken *bool `json:"ignoreClientToken,omitempty"`
	// Faults per action name; the key "*" applies to every action.
	Faults map[string]Fault `json:"faults"`
	// Buckets override AWS's default token bucket of an action.
	Buckets map[string]Bucket `json:"buckets"`
	// Denied actions answer UnauthorizedOperation, as a missing IAM
	// permission would (DryRun included).
	Denied []string `json:"denied"`
	// Down makes EC2 unreachable: every EC2 call's connection is closed
	// unanswered (recorded with the code "Unreachable") until Down is
	// turned off. The emulated STS stays up.
	Down *bool `json:"down,omitempty"`
	// Auth replaces the credential checking and the web-identity tokens
	// STS accepts (auth.go).
	Auth *Auth `json:"auth,omitempty"`
}

// Fault describes injected misbehaviour of one action.
type Fault struct {
	// ErrorRate is the fraction of calls answered with ErrorCode.
	ErrorRate float64 `json:"errorRate,omitempty"`
	// ErrorCode defaults to InternalError (HTTP 500). RequestLimitExceeded
	// and Unavailable give 503, anything else 400.
	ErrorCode string `json:"errorCode,omitempty"`
	// TimeoutRate is the fraction of calls that hang until the client gives
	// up (or a minute passes) and then get a 504.
	TimeoutRate float64 `json:"timeoutRate,omitempty"`
	// AfterApply makes errors and timeouts happen after the action took
	// effect: the caller sees a failure of something that did happen, as
	// with a lost response.
	AfterApply bool `json:"afterApply,omitempty"`
	// Latency and Jitter add a delay of Latency + rand[0,Jitter).
	Latency Duration `json:"latency,omitempty"`
	Jitter  Duration `json:"jitter,omitempty"`
}

// Bucket is a token bucket: Size tokens, refilled at Refill per second.
type Bucket struct {
	Size   float64 `json:"size"`
	Refill float64 `json:"refill"`
}

// ActionCount is what the emulator saw of one action.
type ActionCount struct {
	// Calls counts every request, including throttled and failed ones:
	// they all count against AWS's limits too.
	Calls     int            `json:"calls"`
	Throttled int            `json:"throttled"`
	Errors    map[string]int `json:"errors,omitempty"`
}

// Call is one recorded EC2 request.
type Call struct {
	Time   time.Time           `json:"time"`
	Action string              `json:"action"`
	Params map[string][]string `json:"params"`
	// Code is the error code answered, empty on success.
	Code string `json:"code,omitempty"`
	// AccessKeyID is the caller's, from the request's SigV4 signature
	// (empty when unsigned), as CloudTrail names who made a call: tests
	// that run several clients attribute each call to one of them.
	AccessKeyID string `json:"accessKeyId,omitempty"`
	// Auth is what IAM would authorize for the call (authcontext.go),
	// computed from the world before the call changed it; empty for
	// actions it does not model and calls refused before dispatch.
	Auth []AuthRequest `json:"auth,omitempty"`
}

// Duration is a time.Duration that reads and writes JSON as "1.5s".
type Duration struct{ time.Duration }

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON accepts a Go duration string or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("duration must be a string like \"50ms\": %w", err)
		}
		d.Duration = time.Duration(n)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// World is a whole set of resources loaded in one admin call
// (POST /_emulator/world). IDs may be given or left empty to be generated;
// references between resources use IDs, or the Name of an earlier entry
// in the same World (e.g. subnet "vpcId": "main" when a VPC has "name": "main").
type World struct {
	InstanceTypes     []InstanceTypeSpec     `json:"instanceTypes,omitempty"`
	VPCs              []VPCSpec              `json:"vpcs,omitempty"`
	Subnets           []SubnetSpec           `json:"subnets,omitempty"`
	SecurityGroups    []SecurityGroupSpec    `json:"securityGroups,omitempty"`
	Instances         []InstanceSpec         `json:"instances,omitempty"`
	NetworkInterfaces []NetworkInterfaceSpec `json:"networkInterfaces,omitempty"`
}

// InstanceTypeSpec adds or overrides an instance type.
// Left out: 10 IPv4 addresses per interface, as many IPv6, IPv6
// supported, no EFA, one network card taking every interface.
type InstanceTypeSpec struct {
	Name                      string `json:"name"`
	MaximumNetworkInterfaces  int    `json:"maximumNetworkInterfaces"`
	IPv4AddressesPerInterface int    `json:"ipv4AddressesPerInterface,omitempty"`
	IPv6AddressesPerInterface int    `json:"ipv6AddressesPerInterface,omitempty"`
	IPv6Supported             *bool  `json:"ipv6Supported,omitempty"`
	EFASupported              bool   `json:"efaSupported,omitempty"`
	// NetworkCards are the interface limits of the type's network cards,
	// by card index; they should add up to MaximumNetworkInterfaces.
	NetworkCards []int `json:"networkCards,omitempty"`
}

// VPCSpec seeds a VPC.
type VPCSpec struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"` // also set as the Name tag
	CIDR string `json:"cidr"`
	// SecondaryCIDRs are further IPv4 blocks (at most four), as
	// AssociateVpcCidrBlock adds: subnets may lie in any block.
	SecondaryCIDRs []string `json:"secondaryCidrs,omitempty"`
	// AmazonProvidedIPv6 gives the VPC an IPv6 /56 chosen by EC2, as
	// CreateVpc's AmazonProvidedIpv6CidrBlock does; subnets take /64s of
	// it by IPv6CIDRIndex.
	AmazonProvidedIPv6 bool              `json:"amazonProvidedIpv6CidrBlock,omitempty"`
	Tags               map[string]string `json:"tags,omitempty"`
}

// SubnetSpec seeds a subnet.
type SubnetSpec struct {
	ID       string `json:"id,omitempty"`
	Name     string `json:"name,omitempty"` // also set as the Name tag
	VPC      string `json:"vpcId"`
	CIDR     string `json:"cidr"`
	IPv6CIDR string `json:"ipv6Cidr,omitempty"`
	// IPv6CIDRIndex takes the n-th /64 of the VPC's Amazon-provided block
	// (instead of IPv6CIDR): that block is known only once the VPC exists.
	IPv6CIDRIndex    *int              `json:"ipv6CidrIndex,omitempty"`
	AvailabilityZone string            `json:"availabilityZone"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// IPv6CIDRIn is the subnet's IPv6 CIDR ("" for none) in a VPC whose
// Amazon-provided IPv6 block is vpcBlock (zero when it has none).
func (s SubnetSpec) IPv6CIDRIn(vpcBlock netip.Prefix) (string, error) {
	if s.IPv6CIDRIndex == nil {
		return s.IPv6CIDR, nil
	}
	n := *s.IPv6CIDRIndex
	switch {
	case s.IPv6CIDR != "":
		return "", errors.New("ipv6Cidr and ipv6CidrIndex exclude each other")
	case !vpcBlock.IsValid() || !vpcBlock.Addr().Is6() || vpcBlock.Bits() < 44 || vpcBlock.Bits() > 64:
		return "", fmt.Errorf("ipv6CidrIndex needs a VPC with an IPv6 block of /44 to /64 (amazonProvidedIpv6CidrBlock), not %q", vpcBlock)
	case n < 0 || n >= 1<<(64-vpcBlock.Bits()):
		return "", fmt.Errorf("ipv6CidrIndex %d is outside the %d /64s of %s", n, 1<<(64-vpcBlock.Bits()), vpcBlock)
	}
	a := vpcBlock.Masked().Addr().As16()
	binary.BigEndian.PutUint64(a[:8], binary.BigEndian.Uint64(a[:8])+uint64(n))
	return netip.PrefixFrom(netip.AddrFrom16(a), 64).String(), nil
}

// SecurityGroupSpec seeds a security group.
type SecurityGroupSpec struct {
	ID          string            `json:"id,omitempty"`
	Name        string            `json:"name"` // the GroupName
	VPC         string            `json:"vpcId"`
	Description string            `json:"description,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
}

// InstanceSpec seeds a running instance with its primary ENI (device index 0).
type InstanceSpec struct {
	ID             string   `json:"id,omitempty"`
	Name           string   `json:"name,omitempty"` // also set as the Name tag
	Type           string   `json:"type"`
	Subnet         string   `json:"subnetId"`
	SecurityGroups []string `json:"securityGroupIds,omitempty"`
	PrivateIP      string   `json:"privateIp,omitempty"`
	// SecondaryIPs are put on the primary ENI (VPC CNI pods' addresses).
	SecondaryIPs []string `json:"secondaryIps,omitempty"`
	// SecondaryIPCount allocates that many more secondary IPs.
	SecondaryIPCount int               `json:"secondaryIpCount,omitempty"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// NetworkInterfaceSpec seeds an ENI, optionally attached.
type NetworkInterfaceSpec struct {
	ID               string            `json:"id,omitempty"`
	Subnet           string            `json:"subnetId"`
	InterfaceType    string            `json:"interfaceType,omitempty"` // interface (default), branch, trunk
	Description      string            `json:"description,omitempty"`
	SecurityGroups   []string          `json:"securityGroupIds,omitempty"`
	PrivateIP        string            `json:"privateIp,omitempty"`
	SecondaryIPs     []string          `json:"secondaryIps,omitempty"`
	SecondaryIPCount int               `json:"secondaryIpCount,omitempty"`
	IPv6Addresses    []string          `json:"ipv6Addresses,omitempty"`
	IPv4Prefixes     []string          `json:"ipv4Prefixes,omitempty"`
	IPv4PrefixCount  int               `json:"ipv4PrefixCount,omitempty"`
	Tags             map[string]string `json:"tags,omitempty"`
	// Instance and DeviceIndex attach the ENI when Instance is set.
	Instance            string `json:"instanceId,omitempty"`
	DeviceIndex         int    `json:"deviceIndex,omitempty"`
	NetworkCardIndex    int    `json:"networkCardIndex,omitempty"`
	DeleteOnTermination bool   `json:"deleteOnTermination,omitempty"`
	// Count creates that many ENIs of this shape (IDs and IPs generated).
	Count int `json:"count,omitempty"`
}

// LoadResult lists what a World load created, in the order given.
type LoadResult struct {
	VPCs              []string         `json:"vpcs,omitempty"`
	Subnets           []string         `json:"subnets,omitempty"`
	SecurityGroups    []string         `json:"securityGroups,omitempty"`
	Instances         []LoadedInstance `json:"instances,omitempty"`
	NetworkInterfaces []LoadedENI      `json:"networkInterfaces,omitempty"`
}

// LoadedInstance is one instance created by a World load.
type LoadedInstance struct {
	ID           string   `json:"id"`
	PrivateIP    string   `json:"privateIp"`
	PrimaryENI   string   `json:"primaryEni"`
	MAC          string   `json:"mac"`
	SecondaryIPs []string `json:"secondaryIps,omitempty"`
}

// LoadedENI is one ENI created by a World load.
type LoadedENI struct {
	ID           string   `json:"id"`
	PrivateIP    string   `json:"privateIp"`
	SecondaryIPs []string `json:"secondaryIps,omitempty"`
	MAC          string   `json:"mac"`
	Instance     string   `json:"instanceId,omitempty"`
}
