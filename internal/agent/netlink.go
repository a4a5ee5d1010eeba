package agent

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
)

// netlinkOps are the netlink calls the agent makes: *netlink.Handle of
// the node's namespace in production. It is an interface so a test can
// wrap the handle and count the writes, and so prove that a host that is
// already as wanted is only read.
type netlinkOps interface {
	LinkList() ([]netlink.Link, error)
	AddrList(link netlink.Link, family int) ([]netlink.Addr, error)
	RouteList(link netlink.Link, family int) ([]netlink.Route, error)
	LinkByIndex(index int) (netlink.Link, error)
	LinkSetDown(link netlink.Link) error
	LinkSetName(link netlink.Link, name string) error
	LinkSetUp(link netlink.Link) error
	LinkSetMTU(link netlink.Link, mtu int) error
}

// host reads and changes the links of one network namespace through a
// netlink handle opened in it, so the same code runs on the node (the
// host namespace) and in tests (a namespace of their own).
type host struct {
	h netlinkOps
}

// dumpRetries bounds the retries of a link or route dump the kernel
// interrupted because the set changed meanwhile.
const dumpRetries = 5

// links lists the namespace's links, with their addresses and which of
// them carry a default route of the main table.
func (n host) links() ([]link, error) {
	var nls []netlink.Link
	var err error
	for i := 0; i < dumpRetries; i++ {
		if nls, err = n.h.LinkList(); !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	defaults, err := n.defaultRouteLinks()
	if err != nil {
		return nil, err
	}
	addrs, err := n.addresses()
	if err != nil {
		return nil, err
	}
	out := make([]link, 0, len(nls))
	for _, nl := range nls {
		a := nl.Attrs()
		out = append(out, link{
			Index: a.Index, Name: a.Name, MAC: normalizeMAC(a.HardwareAddr.String()), MTU: a.MTU,
			Up: a.Flags&net.FlagUp != 0, Type: nl.Type(), Parent: a.ParentIndex, Master: a.MasterIndex,
			Loopback: a.Flags&net.FlagLoopback != 0, DefaultRoute: defaults[a.Index], Addrs: addrs[a.Index],
		})
	}
	return out, nil
}

// addresses maps link indexes to their IP addresses (IPv4 and IPv6),
// one dump for the namespace.
func (n host) addresses() (map[int][]string, error) {
	var as []netlink.Addr
	var err error
	for i := 0; i < dumpRetries; i++ {
		if as, err = n.h.AddrList(nil, netlink.FAMILY_ALL); !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("listing addresses: %w", err)
	}
	out := map[int][]string{}
	for _, a := range as {
		if a.IPNet != nil {
			out[a.LinkIndex] = append(out[a.LinkIndex], a.IP.String())
		}
	}
	return out, nil
}

// defaultRouteLinks returns the indexes of links a default route (IPv4 or
// IPv6, main table) leaves through, next hops of multipath routes
// included.
func (n host) defaultRouteLinks() (map[int]bool, error) {
	var routes []netlink.Route
	var err error
	for i := 0; i < dumpRetries; i++ {
		if routes, err = n.h.RouteList(nil, netlink.FAMILY_ALL); !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("listing routes: %w", err)
	}
	out := map[int]bool{}
	for _, r := range routes {
		if r.Dst != nil {
			if ones, _ := r.Dst.Mask.Size(); ones != 0 {
				continue
			}
		}
		if r.LinkIndex > 0 {
			out[r.LinkIndex] = true
		}
		for _, hop := range r.MultiPath {
			out[hop.LinkIndex] = true
		}
	}
	return out, nil
}

// apply carries one action out on the link with index idx.
func (n host) apply(idx int, a linkAction) error {
	l, err := n.h.LinkByIndex(idx)
	if err != nil {
		return fmt.Errorf("finding link %d: %w", idx, err)
	}
	name := l.Attrs().Name
	switch a.Kind {
	case actRename:
		// The kernel refuses to rename a link that is up; it comes back up
		// right after, which the agent wants anyway.
		if err := n.h.LinkSetDown(l); err != nil {
			return fmt.Errorf("setting %s down to rename it: %w", name, err)
		}
		if err := n.h.LinkSetName(l, a.Name); err != nil {
			// Leave it as it was rather than down under its old name.
			_ = n.h.LinkSetUp(l)
			return fmt.Errorf("renaming %s to %s: %w", name, a.Name, err)
		}
		if err := n.h.LinkSetUp(l); err != nil {
			return fmt.Errorf("setting %s up after renaming it from %s: %w", a.Name, name, err)
		}
	case actMTU:
		if err := n.h.LinkSetMTU(l, a.MTU); err != nil {
			return fmt.Errorf("setting the MTU of %s to %d: %w", name, a.MTU, err)
		}
	case actUp:
		if err := n.h.LinkSetUp(l); err != nil {
			return fmt.Errorf("setting %s up: %w", name, err)
		}
	}
	return nil
}

// rename gives a link its name back (a released interface), keeping its
// administrative state.
func (n host) rename(idx int, name string) error {
	l, err := n.h.LinkByIndex(idx)
	if err != nil {
		return fmt.Errorf("finding link %d: %w", idx, err)
	}
	old := l.Attrs().Name
	up := l.Attrs().Flags&net.FlagUp != 0
	if up {
		if err := n.h.LinkSetDown(l); err != nil {
			return fmt.Errorf("setting %s down to rename it: %w", old, err)
		}
	}
	err = n.h.LinkSetName(l, name)
	if up {
		if uerr := n.h.LinkSetUp(l); uerr != nil && err == nil {
			err = uerr
		}
	}
	if err != nil {
		return fmt.Errorf("renaming %s back to %s: %w", old, name, err)
	}
	return nil
}
