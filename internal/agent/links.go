package agent

import (
	"fmt"
	"slices"
	"strings"
)

// link is what the agent knows of one link of the host.
type link struct {
	Index    int
	Name     string
	MAC      string // normalized
	MTU      int
	Up       bool   // administratively up
	Type     string // netlink's kind: device, dummy, veth, vlan, bond, ...
	Parent   int    // IFLA_LINK: the lower link of a VLAN, macvlan or ipvlan, a veth's peer
	Loopback bool
	// DefaultRoute is true when a default route leaves through the link:
	// the node's primary interface, which the agent never touches.
	DefaultRoute bool
}

// stacked tells the link kinds that can carry an ENI's MAC address
// without being the ENI's interface: they sit on top of it (VLAN, macvlan,
// ipvlan) or aggregate it (bond, team, bridge).
func stacked(kind string) bool {
	switch kind {
	case "vlan", "macvlan", "macvtap", "ipvlan", "ipvtap", "macsec", "bond", "team", "bridge", "vxlan", "openvswitch":
		return true
	}
	return false
}

// findLink returns the link that is the interface of the ENI with this
// MAC address. found is false when no such link exists yet (hot plug in
// progress, or bound to a DPDK driver); err is set when several links
// could be it, in which case none is touched.
func findLink(links []link, mac string) (l link, found bool, err error) {
	var cands []link
	for _, c := range links {
		// Not the parent index: a veth's names its peer, and the kinds
		// that sit on another link are known by their kind.
		if c.MAC != mac || c.Loopback || stacked(c.Type) {
			continue
		}
		cands = append(cands, c)
	}
	switch len(cands) {
	case 0:
		return link{}, false, nil
	case 1:
		return cands[0], true, nil
	}
	names := make([]string, len(cands))
	for i, c := range cands {
		names[i] = c.Name
	}
	slices.Sort(names)
	return link{}, false, fmt.Errorf("several interfaces carry MAC address %s (%s); touching none", mac, strings.Join(names, ", "))
}

// linkActionKind is one change of a link.
type linkActionKind int

const (
	actRename linkActionKind = iota // down, rename, up: the kernel refuses to rename a running link
	actMTU
	actUp
)

func (k linkActionKind) String() string {
	return [...]string{"rename", "mtu", "up"}[k]
}

// linkAction is one change to make to a link.
type linkAction struct {
	Kind linkActionKind
	Name string // actRename
	MTU  int    // actMTU
}

// planLink says what to change on l so that it is as w asks: name, MTU,
// up, in that order. byName maps the host's link names to their indexes,
// so a name held by another link is refused rather than taken.
func planLink(l link, w want, byName map[string]int) ([]linkAction, error) {
	if l.DefaultRoute {
		return nil, fmt.Errorf("interface %s (MAC %s) carries a default route, so it looks like the node's primary interface; the agent does not touch it", l.Name, l.MAC)
	}
	var acts []linkAction
	if w.Name != "" && l.Name != w.Name {
		if idx, taken := byName[w.Name]; taken && idx != l.Index {
			return nil, fmt.Errorf("cannot rename %s to %s: another interface (index %d) has that name", l.Name, w.Name, idx)
		}
		acts = append(acts, linkAction{Kind: actRename, Name: w.Name})
	}
	if w.MTU > 0 && l.MTU != int(w.MTU) {
		acts = append(acts, linkAction{Kind: actMTU, MTU: int(w.MTU)})
	}
	// A rename sets the link up itself (it must be down to be renamed).
	if !l.Up && (len(acts) == 0 || acts[0].Kind != actRename) {
		acts = append(acts, linkAction{Kind: actUp})
	}
	return acts, nil
}

// namesOf maps link names to indexes.
func namesOf(links []link) map[string]int {
	m := make(map[string]int, len(links))
	for _, l := range links {
		m[l.Name] = l.Index
	}
	return m
}
