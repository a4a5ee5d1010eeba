// Package nodeeni implements NodeENI: every node matching a NodeENI's
// selector gets an ENI in each of the NodeENI's subnets that lies in the
// node's availability zone.
//
// This package is the shell: it reads the cluster and EC2, calls the
// decisions of internal/nodeeni/eniplan (pure, no I/O) and carries them
// out. Its parts, one job each:
//   - the process's EC2 state (internal/ec2.State, through the EC2
//     interface of ec2.go) keeps the cluster's ENIs fresh (one paginated
//     read per resync interval for the whole cluster, scope
//     InventoryScope) with this process's own changes applied, so
//     reconciles read memory and only mutations call EC2;
//   - the reconciler (controller.go, gather.go, act.go, status.go)
//     gathers a pass's input, has eniplan decide the plan, has the
//     executor (execute.go) carry it out, writes the ENINodes
//     (eninodes.go) and reports in status, conditions, events
//     (report.go) and metrics; a pass waits for its EC2 calls and leaves
//     nothing in flight;
//   - births.go, token.go, tagrecord.go, distrustlog.go hold what must
//     outlive a pass: this process's creates and EC2's answers, tag
//     records not yet in the ENINodes, which untrusted ENIs were
//     reported;
//   - the collector (collector.go) deletes orphaned ENIs: operator-owned,
//     available, whose NodeENI no longer exists;
//   - originals.go lists aws-multi-eni-controller's ENIs while some
//     NodeENI may still have any, for adoption in place.
//
// Safe by default:
//   - the ownership tags are evidence, not proof: the controller and the
//     collector act only on ENIs that pass the trust check
//     (eniplan/trust.go); the others are left alone and reported;
//   - make before break: an ENI superseded by a spec change stays attached
//     until its replacement is, and stays for good (the node reported
//     Degraded) when the new spec cannot be met on its node;
//   - Options.DryRun: no EC2 mutation; status, events, logs and metrics
//     say what would be done.
//
// Crash safety rests on two things: every ENI carries its ownership tags
// from the moment it exists (TagSpecifications), so a restarted operator
// adopts it; and CreateNetworkInterface's ClientToken is derived from what
// the ENI is for (eniplan/token.go), so a create repeated after a lost
// answer or a crash returns the first ENI instead of making a second.
package nodeeni
