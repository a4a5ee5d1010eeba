// Package nodeeni implements NodeENI: every node matching a NodeENI's
// selector gets an ENI in each of the NodeENI's subnets that lies in the
// node's availability zone.
//
// The parts, one job each:
//   - the inventory (internal/ec2.Inventory filtered on the cluster's
//     ownership tag) lists the operator's ENIs once per resync interval for
//     the whole cluster; a local overlay (view.go) adds what this process
//     changed since, so reconciles read memory, and only mutations call EC2;
//   - the catalog (catalog.go) resolves subnet and security-group names;
//   - desired.go, deviceindex.go and plan.go decide, as pure functions,
//     what each NodeENI needs: which ENIs to create, attach, fix, detach
//     and delete, and which nodes cannot get one and why;
//   - the reconciler (controller.go, execute.go, status.go) carries the
//     plan out and reports it in status, conditions, events and metrics;
//   - interfaces.go aggregates the node agents' reports
//     (status.interfaces, which only the agents write) into the
//     InterfacesConfigured condition, a pure function, and wakes the
//     reconciler when those reports change;
//   - the collector (collector.go) deletes orphaned ENIs: operator-owned,
//     available, whose NodeENI no longer exists.
//
// Crash safety rests on two things: every ENI carries its ownership tags
// from the moment it exists (TagSpecifications), so a restarted operator
// adopts it; and CreateNetworkInterface's ClientToken is derived from what
// the ENI is for (token.go), so a create repeated after a lost answer or a
// crash returns the first ENI instead of making a second.
package nodeeni
