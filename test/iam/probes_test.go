package iam

import (
	"testing"

	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// ownershipTags is the tag set the NodeENI controller creates its ENIs
// with (the proof follows in a CreateTags of its own).
func ownershipTags() map[string]string {
	return map[string]string{
		eniplan.TagCluster: cluster, eniplan.TagNodeENI: "multus", eniplan.TagNodeENIUID: "uid",
		eniplan.TagNode: "node-1", eniplan.TagInstance: "i-0node", eniplan.TagCreatedAt: "2026-01-01T00:00:00Z",
		eniplan.TagDeviceIndex: "1", eniplan.TagDeviceIndexBase: "1", eniplan.TagNoManage: "true", "Team": "net",
	}
}

type probe struct {
	name string
	reqs []Request
}

// finding4Probes are the requests of issue 25's finding 4, as EC2
// authorizes them: each was allowed by the shipped documents on one role.
func finding4Probes() []probe {
	own := ownershipTags()
	p := []probe{
		{"create a cluster-tagged ENI in another VPC's subnet with another VPC's group", createENIIn(own, otherSubnet, otherSG)},
		{"create a cluster-tagged ENI in another VPC's subnet", createENIIn(own, otherSubnet, secGroup)},
		{"create a cluster-tagged ENI with another VPC's group", createENIIn(own, subnet, otherSG)},
		{"attach its ENI to another cluster's instance",
			[]Request{on("ec2:AttachNetworkInterface", ownENI), on("ec2:AttachNetworkInterface", otherInstance)}},
		{"attach its ENI to an instance without tags",
			[]Request{on("ec2:AttachNetworkInterface", ownENI), on("ec2:AttachNetworkInterface", bareInstance)}},
		{"switch its ENI to another VPC's security group",
			[]Request{on("ec2:ModifyNetworkInterfaceAttribute", ownENI), on("ec2:ModifyNetworkInterfaceAttribute", otherSG)}},
		{"set a user tag on an ENI of another VPC", []Request{on(createTags, foreignENI, "Team")}},
		{"set the tagger's token on an ENI of another VPC", []Request{on(createTags, foreignENI, tagger.HashTag)}},
		{"remove a tag from an ENI of another VPC", []Request{on(deleteTags, foreignENI, "Team")}},
		{"delete an ENI of another VPC carrying the cluster's tag", []Request{on("ec2:DeleteNetworkInterface", foreignENI)}},
		{"create an ENI carrying the tagger's token", createENI(with(own, tagger.HashTag, "x"))},
		{"create an ENI carrying the VPC CNI's instance_id", createENI(with(own, "node.k8s.amazonaws.com/instance_id", "i-0node"))},
		{"create an ENI carrying the VPC CNI's createdAt", createENI(with(own, "node.k8s.amazonaws.com/createdAt", "2026-01-01T00:00:00Z"))},
	}
	// One key under every foreign reserved prefix, from tagkeys: among
	// them kubernetes.io/cluster/…, karpenter.sh/…, eks:eni:owner.
	for _, pat := range foreignPatterns() {
		key := pat[:len(pat)-1] + "x"
		p = append(p, probe{"create an ENI carrying " + key, createENI(with(own, key, "owned"))})
	}
	for _, key := range []string{"kubernetes.io/cluster/other", "karpenter.sh/nodepool", "eks:eni:owner"} {
		p = append(p, probe{"create an ENI carrying " + key, createENI(with(own, key, "evil"))})
	}
	return p
}

// Each probe of finding 4 is refused: by either document alone and by
// both on one role.
func TestFinding4ProbesAreDenied(t *testing.T) {
	tg, ne := load(t, "tagger.json", cluster), load(t, "nodeeni.json", cluster)
	for _, pr := range finding4Probes() {
		for _, role := range []struct {
			name     string
			policies []Policy
		}{{"tagger alone", []Policy{tg}}, {"NodeENI alone", []Policy{ne}}, {"both on one role", []Policy{tg, ne}}} {
			got, err := Evaluate(role.policies, pr.reqs...)
			if err != nil {
				t.Fatalf("%s, %s: %v", pr.name, role.name, err)
			}
			if got == Allowed {
				t.Errorf("%s, %s: allowed", pr.name, role.name)
			}
		}
	}
}

// The same calls on the cluster's own resources stay allowed, so the
// probes above fail for the reason they name, not for a broken request.
func TestFinding4ControlsAreAllowed(t *testing.T) {
	tg, ne := load(t, "tagger.json", cluster), load(t, "nodeeni.json", cluster)
	for _, pr := range []probe{
		{"create a cluster-tagged ENI in the cluster's subnet with its group", createENI(ownershipTags())},
		{"attach its ENI to the cluster's instance",
			[]Request{on("ec2:AttachNetworkInterface", ownENI), on("ec2:AttachNetworkInterface", instance)}},
		{"detach its ENI from the cluster's instance",
			[]Request{on("ec2:DetachNetworkInterface", ownENI), on("ec2:DetachNetworkInterface", instance)}},
		{"switch its ENI to the cluster's security group",
			[]Request{on("ec2:ModifyNetworkInterfaceAttribute", ownENI), on("ec2:ModifyNetworkInterfaceAttribute", secGroup)}},
		{"sign its ENI", []Request{on(createTags, ownENI, eniplan.TagProof)}},
		{"tag a pod's ENI with the token", []Request{on(createTags, podENI, "Team", tagger.HashTag)}},
		{"untag a pod's ENI", []Request{on(deleteTags, podENI, "Team", tagger.HashTag)}},
	} {
		if got, err := Evaluate([]Policy{tg, ne}, pr.reqs...); err != nil || got != Allowed {
			t.Errorf("%s: %v %v, want allowed", pr.name, got, err)
		}
	}
}
