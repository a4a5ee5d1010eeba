// Package eniplan decides what a NodeENI needs: pure functions over plain
// values, tested with tables. It does no I/O: depguard and
// test/architecture keep context, the API server's and EC2's clients and
// the clock out, so time comes in as an argument. Package nodeeni reads
// the cluster and EC2, calls these decisions and carries them out.
//
// The decisions, by file:
//   - catalog.go, ambiguity.go, selection.go: resolve a spec's subnet and
//     security-group names against the VPC's catalog, refusing a name
//     that matches two subnets of a zone or two groups, and pin what
//     running ENIs were given so a tag written since changes new
//     capacity only;
//   - desired.go, deviceindex.go, settings.go, place.go, supersede.go,
//     plan.go: which ENIs each node needs, where, with which settings,
//     and the actions that get there (create, attach, fix, detach,
//     delete), make before break; the nodes that cannot get one and why;
//   - tags.go, trust.go, births.go, proofs.go: the ownership tags, and
//     which ENIs are the operator's own (the trust check: the tags are
//     evidence, a proof or an ENINode entry is required);
//   - adopt.go, originals.go: which of aws-multi-eni-controller's ENIs are
//     taken over in place;
//   - token.go: a create's ClientToken, derived from what the ENI is for;
//   - eninodes.go, status.go, interfaces.go, selectionreport.go,
//     dryrun.go: each node's ENINode entries, the NodeENI's status and
//     conditions, and a dry run's summary;
//   - tagrecord.go, usertags.go: the user and policy tags an ENI should
//     carry, and which of them the operator may remove;
//   - collector.go: which orphaned ENIs the collector deletes.
package eniplan
