// Package agent is the node side of NodeENI: it configures, on one node,
// the interfaces of the ENIs the operator attached to that node, and
// reports what it did. It holds no AWS credentials; everything it needs
// is in its node's ENINode (ENI, MAC address, device index, NodeENI) and
// the specs of those NodeENIs.
//
// The parts, one job each:
//   - desired.go joins the ENINode's attachments to their NodeENIs into
//     what this node should have: one want per attached ENI (MAC, MTU,
//     name, DPDK, SR-IOV resource);
//   - links.go matches wants to the host's links by MAC address and plans
//     the link changes (rename, MTU, up) as pure functions; netlink.go
//     reads the links and carries the changes out through a
//     netlink.Handle of the node's network namespace;
//   - sysfs.go plans and performs DPDK driver binding through sysfs
//     (driver_override, unbind, drivers_probe) under a configurable root,
//     and restores the original driver;
//   - sriov.go merges this node's resources (devices bound to a DPDK
//     driver, and kernel-driver devices of SR-IOV without DPDK) into the
//     SR-IOV device plugin's config.json, written atomically, adopting
//     entries that already select the same devices, and tells the plugin;
//   - state.go keeps what must outlive the process and cannot be read
//     back from the host (original drivers and names, PCI addresses of
//     bound devices, the config entries the agent owns) in a node-local
//     file;
//   - status.go reports each interface in the ENINode's status.interfaces
//     with server-side apply, the node's own object, so one agent's
//     report never weighs on another's;
//   - controller.go and setup.go are the thin controller: events of the
//     node's ENINode, NodeENI spec changes and link events of the
//     namespace enqueue the node, and one reconcile brings the whole node
//     to the desired state.
//
// Every decision reads the host as it is (names, MTUs and up state
// through netlink, drivers through sysfs, the plugin's config), not what
// the agent remembers, so a node already configured — by the ENI Manager
// the agent replaces, or by an agent whose state file was lost — is
// taken over with no write at all.
package agent
