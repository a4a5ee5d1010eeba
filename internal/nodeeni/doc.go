// Package nodeeni implements NodeENI: every node matching a NodeENI's
// selector gets an ENI in each of the NodeENI's subnets that lies in the
// node's availability zone.
//
// The parts, one job each:
//   - the process's EC2 state (internal/ec2.State, through the EC2
//     interface of ec2.go) keeps the cluster's ENIs fresh (one paginated
//     read per resync interval for the whole cluster, scope
//     InventoryScope) with this process's own changes applied, so
//     reconciles read memory and only mutations call EC2;
//   - catalog.go resolves subnet and security-group names against the
//     state's catalog of the VPC, refusing a name that matches two
//     subnets of a zone or two groups (ambiguity.go);
//   - selection.go pins what running ENIs were given (groups, their
//     zone's subnets) in their ENINode entries, so a tag written since
//     changes new capacity only, until the spec's sources change;
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
//     available, whose NodeENI no longer exists;
//   - adopt.go and originals.go take over aws-multi-eni-controller's ENIs
//     in place: a pure adoption rule (its tags and where the ENI is
//     attached, plus the NodeENI's status entry or its description),
//     adoption as one CreateTags of the ownership tags, and a listing of
//     its ENIs only while some NodeENI may still have any.
//
// Safe by default (trust.go, plan.go, dryrun.go):
//   - the ownership tags are evidence, not proof: the controller and the
//     collector act only on ENIs that pass distrust's check (type
//     "interface", not requester-managed, no eni-tagger.io/ tag, every
//     ownership tag present and agreeing with the attachment and the
//     NodeENI); the others are left alone and reported;
//   - make before break: an ENI superseded by a spec change stays attached
//     until its replacement is, and stays for good (the node reported
//     Degraded) when the new spec cannot be met on its node;
//   - Options.DryRun: no EC2 mutation; status, events, logs and metrics
//     say what would be done.
//
// Crash safety rests on two things: every ENI carries its ownership tags
// from the moment it exists (TagSpecifications), so a restarted operator
// adopts it; and CreateNetworkInterface's ClientToken is derived from what
// the ENI is for (token.go), so a create repeated after a lost answer or a
// crash returns the first ENI instead of making a second.
package nodeeni
