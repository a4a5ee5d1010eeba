package eniplan

import (
	"cmp"
	"fmt"
	"strconv"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
)

// Reasons a node cannot get an ENI with the spec's settings, found
// against its instance type before anything is created.
const (
	ReasonNetworkCardBeyondLimit = "NetworkCardBeyondLimit"
	ReasonAddressLimitExceeded   = "AddressLimitExceeded"
	ReasonIPv6NotSupported       = "IPv6NotSupported"
	ReasonEFANotSupported        = "EFANotSupported"
)

// CleanupSettingsChanged: the spec's interfaceType or networkCardIndex
// changed, which EC2 cannot change on an ENI: it is replaced.
const CleanupSettingsChanged = "SettingsChanged"

// ENISettings are the spec's ENI settings (api/v1alpha1 NodeENISpec
// documents them).
type ENISettings struct {
	SecondaryIPv4, IPv4Prefixes, IPv6Addresses, IPv6Prefixes int
	// Card is the network card the ENIs attach to.
	Card int
	// InterfaceType is interface (or ""), efa or efa-only.
	InterfaceType string
	// SourceDestCheck is nil when the spec leaves it as EC2 has it.
	SourceDestCheck *bool
}

func SettingsOf(spec *v1alpha1.NodeENISpec) ENISettings {
	return ENISettings{SecondaryIPv4: int(spec.SecondaryPrivateIPv4Count), IPv4Prefixes: int(spec.IPv4PrefixCount),
		IPv6Addresses: int(spec.IPv6AddressCount), IPv6Prefixes: int(spec.IPv6PrefixCount), Card: int(spec.NetworkCardIndex),
		InterfaceType: spec.InterfaceType, SourceDestCheck: spec.SourceDestCheck}
}

// efa reports whether the settings ask for an Elastic Fabric Adapter.
func (s ENISettings) efa() bool { return s.kind() == "efa" || s.kind() == "efa-only" }

// Variant names what besides subnet and device index makes an ENI
// another ENI: its interface type and network card. It is empty for a
// plain interface on card 0, so the ClientTokens of ENIs made before
// these settings existed stay what they were.
func (s ENISettings) Variant() string {
	if s.kind() == "interface" && s.Card == 0 {
		return ""
	}
	return s.kind() + "/" + strconv.Itoa(s.Card)
}

// kind is the interface type, interface when unset.
func (s ENISettings) kind() string { return cmp.Or(s.InterfaceType, "interface") }

// Matches reports whether an ENI can serve the settings: the same
// interface type and, when attached, the same network card. A detached
// ENI belongs to no card: attaching chooses one.
func (s ENISettings) Matches(o Owned) bool {
	return cmp.Or(o.InterfaceType, "interface") == s.kind() && (o.Attachment == nil || o.Attachment.NetworkCardIndex == s.Card)
}

// SettingsDrift returns the in-place changes that bring a kept ENI to
// the spec's settings: its source/destination check, and the secondary
// IPv4 addresses it lacks. Lowering the count takes nothing back: the
// addresses may be in use, and others (Multus pods' addresses) may have
// been assigned on the same ENI since.
func SettingsDrift(s ENISettings, o Owned) []Action {
	var out []Action
	if s.SourceDestCheck != nil && *s.SourceDestCheck != o.SourceDestCheck {
		out = append(out, Action{Kind: ActSetSourceDestCheck, Node: o.Node, ENI: o.ID, Check: *s.SourceDestCheck})
	}
	if missing := s.SecondaryIPv4 - len(o.SecondaryIPs); missing > 0 && s.kind() != "efa-only" {
		out = append(out, Action{Kind: ActAssignIPs, Node: o.Node, ENI: o.ID, Count: missing})
	}
	return out
}

// settingsBlock checks the settings against the instance's type before
// an ENI is created or attached there: the network card must exist and,
// for a create, the addresses fit an interface and the type supports
// IPv6 and EFA as asked. Each message says what to do.
func settingsBlock(s ENISettings, inst InstanceView, creating bool) (reason, msg string) {
	l := inst.Limits
	if _, ok := l.Card(s.Card); !ok {
		return ReasonNetworkCardBeyondLimit, fmt.Sprintf("network card %d is beyond instance type %s, which has %d network cards (indexes 0-%d); use a lower networkCardIndex or an instance type with more network cards",
			s.Card, inst.Type, cardCount(l), cardCount(l)-1)
	}
	if !creating {
		return "", ""
	}
	if v4 := 1 + s.SecondaryIPv4 + s.IPv4Prefixes; l.IPv4PerInterface > 0 && v4 > l.IPv4PerInterface {
		return ReasonAddressLimitExceeded, fmt.Sprintf("instance type %s takes %d IPv4 addresses per interface (the primary included); lower secondaryPrivateIPv4Count or ipv4PrefixCount to at most %d together, or use a larger instance type",
			inst.Type, l.IPv4PerInterface, l.IPv4PerInterface-1)
	}
	v6 := s.IPv6Addresses + s.IPv6Prefixes
	if v6 > 0 && !l.IPv6Supported {
		return ReasonIPv6NotSupported, fmt.Sprintf("instance type %s does not support IPv6; unset ipv6AddressCount and ipv6PrefixCount or use a type that does", inst.Type)
	}
	if l.IPv6PerInterface > 0 && v6 > l.IPv6PerInterface {
		return ReasonAddressLimitExceeded, fmt.Sprintf("instance type %s takes %d IPv6 addresses per interface; lower ipv6AddressCount or ipv6PrefixCount, or use a larger instance type",
			inst.Type, l.IPv6PerInterface)
	}
	if s.efa() && !l.EFASupported {
		return ReasonEFANotSupported, fmt.Sprintf("instance type %s does not support EFA; use interfaceType interface or an instance type with EFA support", inst.Type)
	}
	return "", ""
}

// cardCount is how many network cards a type has (one when it reports
// none).
func cardCount(l awstypes.InstanceLimits) int { return max(1, len(l.NetworkCards)) }

// CardLimit is how many interfaces the settings' card takes: the type's
// whole limit on a type of one card.
func CardLimit(l awstypes.InstanceLimits, card int) int {
	c, _ := l.Card(card)
	return c.MaxENIs
}

// CreateInput is the CreateNetworkInterface request of a create action:
// subnet, groups, description and tags, and the spec's address counts
// and interface type.
func CreateInput(spec *v1alpha1.NodeENISpec, a Action, tags map[string]string, token string) awstypes.CreateENIInput {
	s := SettingsOf(spec)
	return awstypes.CreateENIInput{
		SubnetID: a.Want.Subnet, SecurityGroups: a.Groups, Description: a.Description, Tags: tags, ClientToken: token,
		SecondaryIPv4Count: s.SecondaryIPv4, IPv4PrefixCount: s.IPv4Prefixes, IPv6AddressCount: s.IPv6Addresses,
		IPv6PrefixCount: s.IPv6Prefixes, InterfaceType: s.InterfaceType,
	}
}
