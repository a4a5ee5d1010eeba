package nodeeni

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/testenv"
)

// TestDistrust applies every combination of the trust check's faults to
// an ENI as the controller creates it: the ENI is trusted exactly when no
// fault is present, and the reason reported is the first fault in the
// check's order.
func TestDistrust(t *testing.T) {
	const cluster, name = "prod", "multus"
	check := trustCheck{cluster: cluster, keys: testenv.KeyRing("k1")}
	good := func() ec2.ENI {
		e := ec2.ENI{ID: "eni-1", InterfaceType: "interface", Status: "in-use",
			Attachment: &ec2.Attachment{ID: "attach-1", InstanceID: "i-1", DeviceIndex: 2, Status: "attached"},
			Tags: map[string]string{TagCluster: cluster, TagNodeENI: name, TagNodeENIUID: "uid-1", TagNode: "n1",
				TagInstance: "i-1", TagDeviceIndex: "2", TagDeviceIndexBase: "2", TagCreatedAt: "2026-11-23T12:00:00Z", TagNoManage: "true",
				"Team": "net"}}
		e.Tags[TagProof] = check.keys.Sign(claimOf(e))
		return e
	}
	copied := good()
	copied.ID = "eni-2"
	copied.Tags[TagProof] = check.keys.Sign(claimOf(copied))
	type fault struct {
		name   string
		reason string
		apply  func(*ec2.ENI)
	}
	// In the check's order: when several faults are present, the first is
	// the one reported.
	faults := []fault{
		{"branch type", UntrustedInterfaceType, func(e *ec2.ENI) { e.InterfaceType = "branch" }},
		{"requester-managed", UntrustedRequesterManaged, func(e *ec2.ENI) { e.RequesterManaged = true }},
		{"tagger hash", UntrustedTaggerTag, func(e *ec2.ENI) { e.Tags["eni-tagger.io/hash"] = "abc" }},
		{"tagger tag in other case", UntrustedTaggerTag, func(e *ec2.ENI) { e.Tags["ENI-Tagger.io/Owner"] = "x" }},
		{"other cluster", UntrustedCluster, func(e *ec2.ENI) { e.Tags[TagCluster] = "staging" }},
		{"no uid", UntrustedMissingTag, func(e *ec2.ENI) { delete(e.Tags, TagNodeENIUID) }},
		{"empty nodeeni", UntrustedMissingTag, func(e *ec2.ENI) { e.Tags[TagNodeENI] = "" }},
		{"no node", UntrustedMissingTag, func(e *ec2.ENI) { delete(e.Tags, TagNode) }},
		{"no instance", UntrustedMissingTag, func(e *ec2.ENI) { delete(e.Tags, TagInstance) }},
		{"device index not a number", UntrustedDeviceIndexTag, func(e *ec2.ENI) { e.Tags[TagDeviceIndex] = "two" }},
		{"negative base", UntrustedDeviceIndexTag, func(e *ec2.ENI) { e.Tags[TagDeviceIndexBase] = "-1" }},
		{"attached elsewhere", UntrustedAttachedElsewhere, func(e *ec2.ENI) { e.Attachment.InstanceID = "i-2" }},
		{"other NodeENI's name", UntrustedNodeENIName, func(e *ec2.ENI) { e.Tags[TagNodeENI] = "storage" }},
		{"another ENI's proof (a complete copy of its tags)", UntrustedBadProof, func(e *ec2.ENI) { e.Tags[TagProof] = copied.Tags[TagProof] }},
	}
	n := len(faults)
	for mask := 0; mask < 1<<n; mask++ {
		e := good()
		want := ""
		var names []string
		for i, f := range faults {
			if mask&(1<<i) == 0 {
				continue
			}
			f.apply(&e)
			names = append(names, f.name)
		}
		// Faults on the same tag overwrite each other: the expected reason
		// is the first fault in order whose effect is still present.
		for i, f := range faults {
			if mask&(1<<i) == 0 {
				continue
			}
			if f.name == "other NodeENI's name" && e.Tags[TagNodeENI] == "" {
				continue // the empty name is reported as missing
			}
			if f.name == "empty nodeeni" && e.Tags[TagNodeENI] != "" {
				continue // overwritten by another NodeENI's name
			}
			want = f.reason
			break
		}
		reason, detail := check.distrust(e, name)
		if reason != want {
			t.Fatalf("%s: reason %q, want %q (%s)", strings.Join(names, " + "), reason, want, detail)
		}
		if (reason == "") != (detail == "") {
			t.Fatalf("%s: reason %q with detail %q", strings.Join(names, " + "), reason, detail)
		}
	}
}

func TestDistrustEdges(t *testing.T) {
	base := func() ec2.ENI {
		return ec2.ENI{ID: "eni-1", InterfaceType: "interface", Status: "available",
			Tags: map[string]string{TagCluster: "prod", TagNodeENI: "multus", TagNodeENIUID: "uid-1", TagNode: "n1",
				TagInstance: "i-1", TagDeviceIndex: "1", TagDeviceIndexBase: "1"}}
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*ec2.ENI)
		nodeENI string
		want    string
	}{
		{"available, not attached", func(*ec2.ENI) {}, "multus", ""},
		{"NodeENI unknown (collector): the name is not checked", func(e *ec2.ENI) { e.Tags[TagNodeENI] = "gone" }, "", ""},
		{"empty interface type", func(e *ec2.ENI) { e.InterfaceType = "" }, "", UntrustedInterfaceType},
		{"trunk", func(e *ec2.ENI) { e.InterfaceType = "trunk" }, "", UntrustedInterfaceType},
		{"efa", func(e *ec2.ENI) { e.InterfaceType = "efa" }, "", UntrustedInterfaceType},
		{"no cluster tag", func(e *ec2.ENI) { delete(e.Tags, TagCluster) }, "", UntrustedCluster},
		{"no device-index tag", func(e *ec2.ENI) { delete(e.Tags, TagDeviceIndex) }, "", UntrustedDeviceIndexTag},
		{"attaching to the tagged instance", func(e *ec2.ENI) {
			e.Attachment = &ec2.Attachment{InstanceID: "i-1", Status: "attaching"}
		}, "multus", ""},
		{"detaching from another instance", func(e *ec2.ENI) {
			e.Attachment = &ec2.Attachment{InstanceID: "i-9", Status: "detaching"}
		}, "multus", UntrustedAttachedElsewhere},
		{"huge tagger key is quoted short", func(e *ec2.ENI) { e.Tags["eni-tagger.io/"+strings.Repeat("k", 5000)] = "v" }, "", UntrustedTaggerTag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := base()
			tc.mutate(&e)
			reason, detail := distrustShape(e, "prod", tc.nodeENI)
			if reason != tc.want {
				t.Fatalf("reason %q (%s), want %q", reason, detail, tc.want)
			}
			if len(detail) > 300 {
				t.Fatalf("detail is %d bytes", len(detail))
			}
		})
	}
}

func TestDistrustLogReportsChangesOnce(t *testing.T) {
	d := newDistrustLog()
	steps := []struct {
		now  map[string]string
		want string
	}{
		{map[string]string{"eni-1": UntrustedTaggerTag}, "[eni-1]"},
		{map[string]string{"eni-1": UntrustedTaggerTag}, "[]"},
		{map[string]string{"eni-1": UntrustedInterfaceType}, "[eni-1]"},
		{map[string]string{}, "[]"},
		{map[string]string{"eni-1": UntrustedInterfaceType}, "[eni-1]"},
	}
	for i, s := range steps {
		got := d.update("scope", s.now)
		if g := fmt.Sprint(got); g != s.want && (g != "[]" || s.want != "[]") {
			t.Fatalf("step %d: changed %v, want %s", i, got, s.want)
		}
	}
}

// TestProofCheck: the review's copies of a genuine ENI's complete tag set
// onto ENIs someone else created are not trusted, whatever they are
// tagged with; a genuine ENI stays trusted across a key rotation.
func TestProofCheck(t *testing.T) {
	check := trustCheck{cluster: "prod", keys: testenv.KeyRing("k1")}
	genuine := ec2.ENI{ID: "eni-genuine", InterfaceType: "interface", Status: "in-use",
		Attachment: &ec2.Attachment{InstanceID: "i-1", DeviceIndex: 1, Status: "attached"},
		Tags: map[string]string{TagCluster: "prod", TagNodeENI: "multus", TagNodeENIUID: "uid-1", TagNode: "n1",
			TagInstance: "i-1", TagDeviceIndex: "1", TagDeviceIndexBase: "1", TagCreatedAt: "2026-11-27T01:00:00Z"}}
	genuine.Tags[TagProof] = check.keys.Sign(claimOf(genuine))
	other := testenv.KeyRing("k9")
	copyOnto := func(id string, att *ec2.Attachment, mutate func(map[string]string)) ec2.ENI {
		e := ec2.ENI{ID: id, InterfaceType: "interface", Status: "available", Attachment: att, Tags: maps.Clone(genuine.Tags)}
		if att != nil {
			e.Status = "in-use"
		}
		if mutate != nil {
			mutate(e.Tags)
		}
		return e
	}
	for _, tc := range []struct {
		name string
		e    ec2.ENI
		want string
	}{
		{"genuine", genuine, ""},
		{"copy attached to the same node at a free index", copyOnto("eni-foreign", &ec2.Attachment{InstanceID: "i-1", DeviceIndex: 2, Status: "attached"}, nil), UntrustedBadProof},
		{"detached copy (a duplicate)", copyOnto("eni-dup", nil, nil), UntrustedBadProof},
		{"detached copy with a backdated created-at", copyOnto("eni-old", nil, func(t map[string]string) { t[TagCreatedAt] = "2020-01-01T00:00:00Z" }), UntrustedBadProof},
		{"copy without the proof", copyOnto("eni-bare", nil, func(t map[string]string) { delete(t, TagProof) }), UntrustedUnproven},
		{"genuine with its created-at backdated", copyOnto("eni-genuine", genuine.Attachment, func(t map[string]string) { t[TagCreatedAt] = "2020-01-01T00:00:00Z" }), UntrustedBadProof},
		{"genuine with a proof of an unknown key", copyOnto("eni-genuine", genuine.Attachment, func(t map[string]string) {
			t[TagProof] = other.Sign(claimOf(genuine))
		}), UntrustedBadProof},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if reason, detail := check.distrust(tc.e, "multus"); reason != tc.want {
				t.Fatalf("reason %q (%s), want %q", reason, detail, tc.want)
			}
		})
	}
	rotated := trustCheck{cluster: "prod", keys: testenv.KeyRing("k1", "k2")}
	if reason, detail := rotated.distrust(genuine, "multus"); reason != "" {
		t.Fatalf("after rotation: %s (%s)", reason, detail)
	}
}

// An unproven ENI is the operator's only when this process created it or
// the deprecated status.attachments vouches for it during the upgrade it
// serves: the NodeENI not yet written by this version (or the ENI already
// carried into its ENINodes), the ENI in one of its subnets, attached to
// the instance of the node the entry and its tags name, at its index.
func TestVouched(t *testing.T) {
	e := ec2.ENI{ID: "eni-1", SubnetID: "subnet-a",
		Tags:       map[string]string{TagNode: "n1", TagInstance: "i-1", TagDeviceIndex: "1"},
		Attachment: &ec2.Attachment{InstanceID: "i-1", DeviceIndex: 1, Status: "attached"}}
	rec := v1alpha1.ENIAttachment{ENIID: "eni-1", NodeID: "n1", InstanceID: "i-1", SubnetID: "subnet-a", DeviceIndex: 1}
	upgrading := legacyStatus{Records: []v1alpha1.ENIAttachment{rec}, Subnets: map[string]bool{"subnet-a": true}}
	with := func(f func(*legacyStatus, *ec2.ENI)) (legacyStatus, ec2.ENI) {
		l, c := upgrading, e
		c.Attachment = new(*e.Attachment)
		f(&l, &c)
		return l, c
	}
	for _, tc := range []struct {
		name   string
		change func(*legacyStatus, *ec2.ENI)
		here   bool
		want   bool
	}{
		{"created by this process", func(l *legacyStatus, _ *ec2.ENI) { l.Records = nil }, true, true},
		{"first pass of an upgraded NodeENI, its entry matching", func(*legacyStatus, *ec2.ENI) {}, false, true},
		{"written by this version: the status counts no more", func(l *legacyStatus, _ *ec2.ENI) { l.Written = true }, false, false},
		{"written by this version, the ENI carried into its ENINodes", func(l *legacyStatus, _ *ec2.ENI) {
			l.Written, l.Carried = true, map[string]bool{"eni-1": true}
		}, false, true},
		{"written by this version, another ENI carried", func(l *legacyStatus, _ *ec2.ENI) {
			l.Written, l.Carried = true, map[string]bool{"eni-2": true}
		}, false, false},
		{"in a subnet not the NodeENI's", func(_ *legacyStatus, c *ec2.ENI) { c.SubnetID = "subnet-b" }, false, false},
		{"no subnet resolved", func(l *legacyStatus, _ *ec2.ENI) { l.Subnets = nil }, false, false},
		{"the entry in another subnet", func(l *legacyStatus, _ *ec2.ENI) {
			r := rec
			r.SubnetID = "subnet-b"
			l.Records, l.Subnets = []v1alpha1.ENIAttachment{r}, map[string]bool{"subnet-a": true, "subnet-b": true}
		}, false, false},
		{"detached", func(_ *legacyStatus, c *ec2.ENI) { c.Attachment = nil }, false, false},
		{"attached elsewhere", func(_ *legacyStatus, c *ec2.ENI) { c.Attachment.InstanceID = "i-2" }, false, false},
		{"attached at another index", func(_ *legacyStatus, c *ec2.ENI) { c.Attachment.DeviceIndex = 2 }, false, false},
		{"the entry at another index", func(l *legacyStatus, _ *ec2.ENI) {
			r := rec
			r.DeviceIndex = 2
			l.Records = []v1alpha1.ENIAttachment{r}
		}, false, false},
		{"named on another node", func(l *legacyStatus, _ *ec2.ENI) {
			r := rec
			r.NodeID = "n2"
			l.Records = []v1alpha1.ENIAttachment{r}
		}, false, false},
		{"named for another instance", func(l *legacyStatus, _ *ec2.ENI) {
			r := rec
			r.InstanceID = "i-2"
			l.Records = []v1alpha1.ENIAttachment{r}
		}, false, false},
		{"status names another ENI", func(l *legacyStatus, _ *ec2.ENI) {
			r := rec
			r.ENIID = "eni-2"
			l.Records = []v1alpha1.ENIAttachment{r}
		}, false, false},
		{"no evidence", func(l *legacyStatus, _ *ec2.ENI) { l.Records = nil }, false, false},
	} {
		l, c := with(tc.change)
		if got := vouched(c, l, tc.here); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The entries of status.attachments that still count (for proofs and
// adoptions alike): all of them before this version wrote the NodeENI,
// then only those of ENIs its ENINodes already carry.
func TestLegacyStatusCounted(t *testing.T) {
	a := v1alpha1.ENIAttachment{ENIID: "eni-a"}
	b := v1alpha1.ENIAttachment{ENIID: "eni-b"}
	for _, tc := range []struct {
		name string
		l    legacyStatus
		want []string
	}{
		{"not yet written", legacyStatus{Records: []v1alpha1.ENIAttachment{a, b}}, []string{"eni-a", "eni-b"}},
		{"written", legacyStatus{Records: []v1alpha1.ENIAttachment{a, b}, Written: true}, nil},
		{"written, one carried", legacyStatus{Records: []v1alpha1.ENIAttachment{a, b}, Written: true,
			Carried: map[string]bool{"eni-b": true}}, []string{"eni-b"}},
	} {
		var got []string
		for _, r := range tc.l.counted() {
			got = append(got, r.ENIID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
