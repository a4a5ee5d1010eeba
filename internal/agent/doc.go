// Package agent is the node side of NodeENI: it configures, on one node,
// the interfaces of the ENIs the operator attached to that node, and
// reports what it did. It holds no AWS credentials; everything it needs
// is in the NodeENIs' status (node, ENI, MAC address, device index).
//
// The parts, one job each:
//   - desired.go turns the NodeENIs into what this node should have: one
//     want per attached ENI (MAC, MTU, name, DPDK, SR-IOV resource);
//   - links.go matches wants to the host's links by MAC address and plans
//     the link changes (rename, MTU, up) as pure functions; netlink.go
//     reads the links and carries the changes out through a
//     netlink.Handle of the node's network namespace;
//   - sysfs.go plans and performs DPDK driver binding through sysfs
//     (driver_override, unbind, drivers_probe) under a configurable root,
//     and restores the original driver;
//   - sriov.go merges this node's resources into the SR-IOV device
//     plugin's config.json, written atomically, and tells the plugin;
//   - state.go keeps what must outlive the process and cannot be read
//     back from the host (original drivers and names, PCI addresses of
//     bound devices, the config entries the agent owns) in a node-local
//     file;
//   - status.go reports each interface in the NodeENI's status with
//     server-side apply, one field manager per node, so agents on many
//     nodes never conflict;
//   - controller.go and setup.go are the thin controller: NodeENI events
//     and link events of the namespace enqueue the node, and one
//     reconcile brings the whole node to the desired state.
package agent
