package emulator

import (
	"encoding/xml"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"time"
)

// ec2Namespace is the XML namespace of EC2 API version 2016-11-15, the
// version every current SDK speaks.
const ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"

// The x* types mirror the EC2 XML response shapes (element names as in the
// EC2 API reference); only fields the emulator models are present.

type xTag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

type xTagDescription struct {
	ResourceID   string `xml:"resourceId"`
	ResourceType string `xml:"resourceType"`
	Key          string `xml:"key"`
	Value        string `xml:"value"`
}

type xGroup struct {
	GroupID   string `xml:"groupId"`
	GroupName string `xml:"groupName"`
}

type xAttachment struct {
	AttachmentID        string `xml:"attachmentId"`
	InstanceID          string `xml:"instanceId,omitempty"`
	InstanceOwnerID     string `xml:"instanceOwnerId,omitempty"`
	DeviceIndex         int    `xml:"deviceIndex"`
	NetworkCardIndex    int    `xml:"networkCardIndex"`
	Status              string `xml:"status"`
	AttachTime          string `xml:"attachTime"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
}

type xPrivateIP struct {
	PrivateIPAddress string `xml:"privateIpAddress"`
	PrivateDNSName   string `xml:"privateDnsName"`
	Primary          bool   `xml:"primary"`
}

type xIPv6 struct {
	IPv6Address string `xml:"ipv6Address"`
}

type xIPv4Prefix struct {
	IPv4Prefix string `xml:"ipv4Prefix"`
}

// xNetworkInterface is an ENI as DescribeNetworkInterfaces shows it: what
// DescribeInstances shows of it (embedded; encoding/xml promotes its
// fields) and more.
type xNetworkInterface struct {
	xInstanceNetworkInterface
	AvailabilityZone   string `xml:"availabilityZone"`
	AvailabilityZoneID string `xml:"availabilityZoneId"`
	RequesterManaged   bool   `xml:"requesterManaged"`
	PrivateDNSName     string `xml:"privateDnsName"`
	SourceDestCheck    bool   `xml:"sourceDestCheck"`
	Tags               []xTag `xml:"tagSet>item"`
}

type xInstanceState struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

type xPlacement struct {
	AvailabilityZone string `xml:"availabilityZone"`
	Tenancy          string `xml:"tenancy"`
}

// xInstanceNetworkInterface is an ENI as DescribeInstances shows it.
type xInstanceNetworkInterface struct {
	NetworkInterfaceID string        `xml:"networkInterfaceId"`
	SubnetID           string        `xml:"subnetId"`
	VpcID              string        `xml:"vpcId"`
	Description        string        `xml:"description"`
	OwnerID            string        `xml:"ownerId"`
	Status             string        `xml:"status"`
	MacAddress         string        `xml:"macAddress"`
	PrivateIPAddress   string        `xml:"privateIpAddress"`
	InterfaceType      string        `xml:"interfaceType"`
	Groups             []xGroup      `xml:"groupSet>item"`
	Attachment         *xAttachment  `xml:"attachment,omitempty"`
	PrivateIPs         []xPrivateIP  `xml:"privateIpAddressesSet>item"`
	IPv6Addresses      []xIPv6       `xml:"ipv6AddressesSet>item"`
	IPv4Prefixes       []xIPv4Prefix `xml:"ipv4PrefixSet>item"`
	IPv6Prefixes       []xIPv6Prefix `xml:"ipv6PrefixSet>item"`
}

type xInstance struct {
	InstanceID        string                      `xml:"instanceId"`
	ImageID           string                      `xml:"imageId"`
	State             xInstanceState              `xml:"instanceState"`
	PrivateDNSName    string                      `xml:"privateDnsName"`
	InstanceType      string                      `xml:"instanceType"`
	LaunchTime        string                      `xml:"launchTime"`
	Placement         xPlacement                  `xml:"placement"`
	SubnetID          string                      `xml:"subnetId,omitempty"`
	VpcID             string                      `xml:"vpcId,omitempty"`
	PrivateIPAddress  string                      `xml:"privateIpAddress,omitempty"`
	ClientToken       string                      `xml:"clientToken,omitempty"`
	Groups            []xGroup                    `xml:"groupSet>item"`
	Tags              []xTag                      `xml:"tagSet>item"`
	NetworkInterfaces []xInstanceNetworkInterface `xml:"networkInterfaceSet>item"`
}

type xReservation struct {
	ReservationID string      `xml:"reservationId"`
	OwnerID       string      `xml:"ownerId"`
	Instances     []xInstance `xml:"instancesSet>item"`
}

type xSubnet struct {
	SubnetID                string                 `xml:"subnetId"`
	State                   string                 `xml:"state"`
	VpcID                   string                 `xml:"vpcId"`
	CidrBlock               string                 `xml:"cidrBlock"`
	AvailableIPAddressCount int                    `xml:"availableIpAddressCount"`
	AvailabilityZone        string                 `xml:"availabilityZone"`
	AvailabilityZoneID      string                 `xml:"availabilityZoneId"`
	OwnerID                 string                 `xml:"ownerId"`
	SubnetArn               string                 `xml:"subnetArn"`
	Ipv6CidrBlocks          []xIPv6CidrAssociation `xml:"ipv6CidrBlockAssociationSet>item"`
	Tags                    []xTag                 `xml:"tagSet>item"`
}

type xIPv6CidrAssociation struct {
	AssociationID string `xml:"associationId"`
	Ipv6CidrBlock string `xml:"ipv6CidrBlock"`
	State         struct {
		State string `xml:"state"`
	} `xml:"ipv6CidrBlockState"`
}

type xVpc struct {
	VpcID          string                 `xml:"vpcId"`
	State          string                 `xml:"state"`
	CidrBlock      string                 `xml:"cidrBlock"`
	OwnerID        string                 `xml:"ownerId"`
	IsDefault      bool                   `xml:"isDefault"`
	Ipv6CidrBlocks []xIPv6CidrAssociation `xml:"ipv6CidrBlockAssociationSet>item"`
	Tags           []xTag                 `xml:"tagSet>item"`
}

type xSecurityGroup struct {
	OwnerID          string `xml:"ownerId"`
	GroupID          string `xml:"groupId"`
	GroupName        string `xml:"groupName"`
	GroupDescription string `xml:"groupDescription"`
	VpcID            string `xml:"vpcId"`
	Tags             []xTag `xml:"tagSet>item"`
}

type xStateChange struct {
	InstanceID    string         `xml:"instanceId"`
	CurrentState  xInstanceState `xml:"currentState"`
	PreviousState xInstanceState `xml:"previousState"`
}

// xErrorResponse is EC2's error envelope.
type xErrorResponse struct {
	XMLName   xml.Name `xml:"Response"`
	Errors    []xError `xml:"Errors>Error"`
	RequestID string   `xml:"RequestID"`
}

type xError struct {
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func xTags(tags map[string]string) []xTag {
	keys := slices.Sorted(maps.Keys(tags))
	out := make([]xTag, len(keys))
	for i, k := range keys {
		out[i] = xTag{Key: k, Value: tags[k]}
	}
	return out
}

func (w *world) xGroups(ids []string) []xGroup {
	out := make([]xGroup, 0, len(ids))
	for _, id := range ids {
		g := xGroup{GroupID: id}
		if sg, ok := w.groups[id]; ok {
			g.GroupName = sg.name
		}
		out = append(out, g)
	}
	return out
}

func (w *world) dnsName(a netip.Addr) string {
	if !a.Is4() {
		return ""
	}
	b := a.As4()
	return "ip-" + strconv.Itoa(int(b[0])) + "-" + strconv.Itoa(int(b[1])) + "-" + strconv.Itoa(int(b[2])) + "-" +
		strconv.Itoa(int(b[3])) + "." + w.region + ".compute.internal"
}

func (w *world) xAttachment(a *attachment) *xAttachment {
	if a == nil {
		return nil
	}
	return &xAttachment{
		AttachmentID: a.id, InstanceID: a.instanceID, InstanceOwnerID: w.accountID,
		DeviceIndex: a.deviceIndex, NetworkCardIndex: a.networkCard, Status: a.status, AttachTime: timestamp(a.attachTime),
		DeleteOnTermination: a.deleteOnTermination,
	}
}

func (w *world) xPrivateIPs(n *eni) []xPrivateIP {
	out := []xPrivateIP{{PrivateIPAddress: n.primaryIP.String(), PrivateDNSName: w.dnsName(n.primaryIP), Primary: true}}
	for _, a := range n.secondaryIPs {
		out = append(out, xPrivateIP{PrivateIPAddress: a.String(), PrivateDNSName: w.dnsName(a)})
	}
	return out
}

func xIPv6s(n *eni) []xIPv6 {
	return xList(n.ipv6, func(a netip.Addr) xIPv6 { return xIPv6{IPv6Address: a.String()} })
}

func xPrefixes(n *eni) []xIPv4Prefix {
	return xList(n.prefixes, func(p netip.Prefix) xIPv4Prefix { return xIPv4Prefix{IPv4Prefix: p.String()} })
}

// xList is the XML list of a slice, an element each.
func xList[S, X any](in []S, x func(S) X) []X {
	out := make([]X, len(in))
	for i, v := range in {
		out[i] = x(v)
	}
	return out
}

func (w *world) xENI(n *eni) xNetworkInterface {
	return xNetworkInterface{
		xInstanceNetworkInterface: w.xInstanceENI(n),
		AvailabilityZone:          n.az, AvailabilityZoneID: azID(n.az), RequesterManaged: n.requesterManaged,
		PrivateDNSName: w.dnsName(n.primaryIP), SourceDestCheck: n.sourceDestCheck, Tags: xTags(w.describedTags(&n.resource)),
	}
}

func (w *world) xInstanceENI(n *eni) xInstanceNetworkInterface {
	return xInstanceNetworkInterface{
		NetworkInterfaceID: n.id, SubnetID: n.subnetID, VpcID: n.vpcID, Description: n.description,
		OwnerID: w.accountID, Status: n.status(), MacAddress: n.mac, PrivateIPAddress: n.primaryIP.String(),
		InterfaceType: n.interfaceType, Groups: w.xGroups(n.groups), Attachment: w.xAttachment(n.attachment),
		PrivateIPs: w.xPrivateIPs(n), IPv6Addresses: xIPv6s(n), IPv4Prefixes: xPrefixes(n), IPv6Prefixes: xIPv6Prefixes(n),
	}
}

func xState(name string) xInstanceState {
	code := 0
	switch name {
	case "running":
		code = 16
	case "shutting-down":
		code = 32
	case "terminated":
		code = 48
	case "stopping":
		code = 64
	case "stopped":
		code = 80
	}
	return xInstanceState{Code: code, Name: name}
}

func (w *world) xInstance(i *instance) xInstance {
	x := xInstance{
		InstanceID: i.id, ImageID: i.imageID, State: xState(i.state), InstanceType: i.instanceType,
		LaunchTime: timestamp(i.launchTime), Placement: xPlacement{AvailabilityZone: i.az, Tenancy: "default"},
		ClientToken: i.clientToken, Tags: xTags(i.tags),
	}
	if i.state == "terminated" {
		return x
	}
	x.SubnetID, x.VpcID, x.Groups = i.subnetID, i.vpcID, w.xGroups(i.groups)
	for _, n := range w.attachedTo(i.id) {
		if n.id == i.primaryENI {
			x.PrivateIPAddress = n.primaryIP.String()
			x.PrivateDNSName = w.dnsName(n.primaryIP)
		}
		x.NetworkInterfaces = append(x.NetworkInterfaces, w.xInstanceENI(n))
	}
	return x
}

func (w *world) xSubnet(s *subnet) xSubnet {
	x := xSubnet{
		SubnetID: s.id, State: "available", VpcID: s.vpcID, CidrBlock: s.cidr.String(),
		AvailableIPAddressCount: w.freeAddresses(s), AvailabilityZone: s.az, AvailabilityZoneID: azID(s.az),
		OwnerID: w.accountID, SubnetArn: "arn:aws:ec2:" + w.region + ":" + w.accountID + ":subnet/" + s.id,
		Tags: xTags(s.tags),
	}
	if s.ipv6.IsValid() {
		a := xIPv6CidrAssociation{AssociationID: "subnet-cidr-assoc-" + s.id[len("subnet-"):], Ipv6CidrBlock: s.ipv6.String()}
		a.State.State = "associated"
		x.Ipv6CidrBlocks = []xIPv6CidrAssociation{a}
	}
	return x
}

// azID derives a zone ID (use1-az1) from a zone name (us-east-1a); real
// mappings differ per account, which is exactly why clients must not rely on them.
func azID(az string) string {
	if az == "" {
		return ""
	}
	letter := az[len(az)-1]
	return az[:len(az)-1] + "-az" + strconv.Itoa(int(letter-'a')+1)
}

func (w *world) freeAddresses(s *subnet) int {
	size := 1 << (32 - s.cidr.Bits())
	return size - 5 - s.used
}
