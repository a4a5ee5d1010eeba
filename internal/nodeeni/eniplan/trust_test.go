package eniplan

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// TestDistrust applies every combination of the trust check's faults to
// an ENI as the controller creates it: the ENI is trusted exactly when no
// fault is present, and the reason reported is the first fault in the
// check's order.
func TestDistrust(t *testing.T) {
	const cluster, name = "prod", "multus"
	check := TrustCheck{Cluster: cluster, Keys: testenv.KeyRing("k1")}
	good := func() awstypes.ENI {
		e := awstypes.ENI{ID: "eni-1", InterfaceType: "interface", Status: "in-use",
			Attachment: &awstypes.Attachment{ID: "attach-1", InstanceID: "i-1", DeviceIndex: 2, Status: "attached"},
			Tags: map[string]string{TagCluster: cluster, TagNodeENI: name, TagNodeENIUID: "uid-1", TagNode: "n1",
				TagInstance: "i-1", TagDeviceIndex: "2", TagDeviceIndexBase: "2", TagCreatedAt: "2026-11-23T12:00:00Z", TagNoManage: "true",
				"Team": "net"}}
		e.Tags[TagProof] = check.Keys.Sign(ClaimOf(e))
		return e
	}
	copied := good()
	copied.ID = "eni-2"
	copied.Tags[TagProof] = check.Keys.Sign(ClaimOf(copied))
	type fault struct {
		name   string
		reason string
		apply  func(*awstypes.ENI)
	}
	// In the check's order: when several faults are present, the first is
	// the one reported.
	faults := []fault{
		{"branch type", UntrustedInterfaceType, func(e *awstypes.ENI) { e.InterfaceType = "branch" }},
		{"requester-managed", UntrustedRequesterManaged, func(e *awstypes.ENI) { e.RequesterManaged = true }},
		{"tagger hash", UntrustedTaggerTag, func(e *awstypes.ENI) { e.Tags["eni-tagger.io/hash"] = "abc" }},
		{"tagger tag in other case", UntrustedTaggerTag, func(e *awstypes.ENI) { e.Tags["ENI-Tagger.io/Owner"] = "x" }},
		{"other cluster", UntrustedCluster, func(e *awstypes.ENI) { e.Tags[TagCluster] = "staging" }},
		{"no uid", UntrustedMissingTag, func(e *awstypes.ENI) { delete(e.Tags, TagNodeENIUID) }},
		{"empty nodeeni", UntrustedMissingTag, func(e *awstypes.ENI) { e.Tags[TagNodeENI] = "" }},
		{"no node", UntrustedMissingTag, func(e *awstypes.ENI) { delete(e.Tags, TagNode) }},
		{"no instance", UntrustedMissingTag, func(e *awstypes.ENI) { delete(e.Tags, TagInstance) }},
		{"device index not a number", UntrustedDeviceIndexTag, func(e *awstypes.ENI) { e.Tags[TagDeviceIndex] = "two" }},
		{"negative base", UntrustedDeviceIndexTag, func(e *awstypes.ENI) { e.Tags[TagDeviceIndexBase] = "-1" }},
		{"attached elsewhere", UntrustedAttachedElsewhere, func(e *awstypes.ENI) { e.Attachment.InstanceID = "i-2" }},
		{"other NodeENI's name", UntrustedNodeENIName, func(e *awstypes.ENI) { e.Tags[TagNodeENI] = "storage" }},
		{"another ENI's proof (a complete copy of its tags)", UntrustedBadProof, func(e *awstypes.ENI) { e.Tags[TagProof] = copied.Tags[TagProof] }},
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
	base := func() awstypes.ENI {
		return awstypes.ENI{ID: "eni-1", InterfaceType: "interface", Status: "available",
			Tags: map[string]string{TagCluster: "prod", TagNodeENI: "multus", TagNodeENIUID: "uid-1", TagNode: "n1",
				TagInstance: "i-1", TagDeviceIndex: "1", TagDeviceIndexBase: "1"}}
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*awstypes.ENI)
		nodeENI string
		want    string
	}{
		{"available, not attached", func(*awstypes.ENI) {}, "multus", ""},
		{"NodeENI unknown (collector): the name is not checked", func(e *awstypes.ENI) { e.Tags[TagNodeENI] = "gone" }, "", ""},
		{"empty interface type", func(e *awstypes.ENI) { e.InterfaceType = "" }, "", UntrustedInterfaceType},
		{"trunk", func(e *awstypes.ENI) { e.InterfaceType = "trunk" }, "", UntrustedInterfaceType},
		{"efa", func(e *awstypes.ENI) { e.InterfaceType = "efa" }, "", UntrustedInterfaceType},
		{"no cluster tag", func(e *awstypes.ENI) { delete(e.Tags, TagCluster) }, "", UntrustedCluster},
		{"no device-index tag", func(e *awstypes.ENI) { delete(e.Tags, TagDeviceIndex) }, "", UntrustedDeviceIndexTag},
		{"attaching to the tagged instance", func(e *awstypes.ENI) {
			e.Attachment = &awstypes.Attachment{InstanceID: "i-1", Status: "attaching"}
		}, "multus", ""},
		{"detaching from another instance", func(e *awstypes.ENI) {
			e.Attachment = &awstypes.Attachment{InstanceID: "i-9", Status: "detaching"}
		}, "multus", UntrustedAttachedElsewhere},
		{"huge tagger key is quoted short", func(e *awstypes.ENI) { e.Tags["eni-tagger.io/"+strings.Repeat("k", 5000)] = "v" }, "", UntrustedTaggerTag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := base()
			tc.mutate(&e)
			reason, detail := DistrustShape(e, "prod", tc.nodeENI)
			if reason != tc.want {
				t.Fatalf("reason %q (%s), want %q", reason, detail, tc.want)
			}
			if len(detail) > 300 {
				t.Fatalf("detail is %d bytes", len(detail))
			}
		})
	}
}

// TestProofCheck: the review's copies of a genuine ENI's complete tag set
// onto ENIs someone else created are not trusted, whatever they are
// tagged with; a genuine ENI stays trusted across a key rotation.
func TestProofCheck(t *testing.T) {
	check := TrustCheck{Cluster: "prod", Keys: testenv.KeyRing("k1")}
	genuine := awstypes.ENI{ID: "eni-genuine", InterfaceType: "interface", Status: "in-use",
		Attachment: &awstypes.Attachment{InstanceID: "i-1", DeviceIndex: 1, Status: "attached"},
		Tags: map[string]string{TagCluster: "prod", TagNodeENI: "multus", TagNodeENIUID: "uid-1", TagNode: "n1",
			TagInstance: "i-1", TagDeviceIndex: "1", TagDeviceIndexBase: "1", TagCreatedAt: "2026-11-27T01:00:00Z"}}
	genuine.Tags[TagProof] = check.Keys.Sign(ClaimOf(genuine))
	other := testenv.KeyRing("k9")
	copyOnto := func(id string, att *awstypes.Attachment, mutate func(map[string]string)) awstypes.ENI {
		e := awstypes.ENI{ID: id, InterfaceType: "interface", Status: "available", Attachment: att, Tags: maps.Clone(genuine.Tags)}
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
		e    awstypes.ENI
		want string
	}{
		{"genuine", genuine, ""},
		{"copy attached to the same node at a free index", copyOnto("eni-foreign", &awstypes.Attachment{InstanceID: "i-1", DeviceIndex: 2, Status: "attached"}, nil), UntrustedBadProof},
		{"detached copy (a duplicate)", copyOnto("eni-dup", nil, nil), UntrustedBadProof},
		{"detached copy with a backdated created-at", copyOnto("eni-old", nil, func(t map[string]string) { t[TagCreatedAt] = "2020-01-01T00:00:00Z" }), UntrustedBadProof},
		{"copy without the proof", copyOnto("eni-bare", nil, func(t map[string]string) { delete(t, TagProof) }), UntrustedUnproven},
		{"genuine with its created-at backdated", copyOnto("eni-genuine", genuine.Attachment, func(t map[string]string) { t[TagCreatedAt] = "2020-01-01T00:00:00Z" }), UntrustedBadProof},
		{"genuine with a proof of an unknown key", copyOnto("eni-genuine", genuine.Attachment, func(t map[string]string) {
			t[TagProof] = other.Sign(ClaimOf(genuine))
		}), UntrustedBadProof},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if reason, detail := check.distrust(tc.e, "multus"); reason != tc.want {
				t.Fatalf("reason %q (%s), want %q", reason, detail, tc.want)
			}
		})
	}
	rotated := TrustCheck{Cluster: "prod", Keys: testenv.KeyRing("k1", "k2")}
	if reason, detail := rotated.distrust(genuine, "multus"); reason != "" {
		t.Fatalf("after rotation: %s (%s)", reason, detail)
	}
}

// An unproven ENI is the operator's only when the deprecated
// status.attachments vouches for it during the upgrade it
// serves: the NodeENI not yet written by this version (or the ENI already
// carried into its ENINodes), the ENI in one of its subnets, attached to
// the instance of the node the entry and its tags name, at its index.
func TestVouched(t *testing.T) {
	e := awstypes.ENI{ID: "eni-1", SubnetID: "subnet-a",
		Tags:       map[string]string{TagNode: "n1", TagInstance: "i-1", TagDeviceIndex: "1"},
		Attachment: &awstypes.Attachment{InstanceID: "i-1", DeviceIndex: 1, Status: "attached"}}
	rec := v1alpha1.ENIAttachment{ENIID: "eni-1", NodeID: "n1", InstanceID: "i-1", SubnetID: "subnet-a", DeviceIndex: 1}
	upgrading := LegacyStatus{Records: []v1alpha1.ENIAttachment{rec}, Subnets: map[string]bool{"subnet-a": true}}
	with := func(f func(*LegacyStatus, *awstypes.ENI)) (LegacyStatus, awstypes.ENI) {
		l, c := upgrading, e
		c.Attachment = new(*e.Attachment)
		f(&l, &c)
		return l, c
	}
	for _, tc := range []struct {
		name   string
		change func(*LegacyStatus, *awstypes.ENI)
		want   bool
	}{
		{"first pass of an upgraded NodeENI, its entry matching", func(*LegacyStatus, *awstypes.ENI) {}, true},
		{"written by this version: the status counts no more", func(l *LegacyStatus, _ *awstypes.ENI) { l.Written = true }, false},
		{"written by this version, the ENI carried into its ENINodes", func(l *LegacyStatus, _ *awstypes.ENI) {
			l.Written, l.Carried = true, map[string]bool{"eni-1": true}
		}, true},
		{"written by this version, another ENI carried", func(l *LegacyStatus, _ *awstypes.ENI) {
			l.Written, l.Carried = true, map[string]bool{"eni-2": true}
		}, false},
		{"in a subnet not the NodeENI's", func(_ *LegacyStatus, c *awstypes.ENI) { c.SubnetID = "subnet-b" }, false},
		{"no subnet resolved", func(l *LegacyStatus, _ *awstypes.ENI) { l.Subnets = nil }, false},
		{"the entry in another subnet", func(l *LegacyStatus, _ *awstypes.ENI) {
			r := rec
			r.SubnetID = "subnet-b"
			l.Records, l.Subnets = []v1alpha1.ENIAttachment{r}, map[string]bool{"subnet-a": true, "subnet-b": true}
		}, false},
		{"detached", func(_ *LegacyStatus, c *awstypes.ENI) { c.Attachment = nil }, false},
		{"attached elsewhere", func(_ *LegacyStatus, c *awstypes.ENI) { c.Attachment.InstanceID = "i-2" }, false},
		{"attached at another index", func(_ *LegacyStatus, c *awstypes.ENI) { c.Attachment.DeviceIndex = 2 }, false},
		{"the entry at another index", func(l *LegacyStatus, _ *awstypes.ENI) {
			r := rec
			r.DeviceIndex = 2
			l.Records = []v1alpha1.ENIAttachment{r}
		}, false},
		{"named on another node", func(l *LegacyStatus, _ *awstypes.ENI) {
			r := rec
			r.NodeID = "n2"
			l.Records = []v1alpha1.ENIAttachment{r}
		}, false},
		{"named for another instance", func(l *LegacyStatus, _ *awstypes.ENI) {
			r := rec
			r.InstanceID = "i-2"
			l.Records = []v1alpha1.ENIAttachment{r}
		}, false},
		{"status names another ENI", func(l *LegacyStatus, _ *awstypes.ENI) {
			r := rec
			r.ENIID = "eni-2"
			l.Records = []v1alpha1.ENIAttachment{r}
		}, false},
		{"no evidence", func(l *LegacyStatus, _ *awstypes.ENI) { l.Records = nil }, false},
	} {
		l, c := with(tc.change)
		if got := Vouched(c, l); got != tc.want {
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
		l    LegacyStatus
		want []string
	}{
		{"not yet written", LegacyStatus{Records: []v1alpha1.ENIAttachment{a, b}}, []string{"eni-a", "eni-b"}},
		{"written", LegacyStatus{Records: []v1alpha1.ENIAttachment{a, b}, Written: true}, nil},
		{"written, one carried", LegacyStatus{Records: []v1alpha1.ENIAttachment{a, b}, Written: true,
			Carried: map[string]bool{"eni-b": true}}, []string{"eni-b"}},
	} {
		var got []string
		for _, r := range tc.l.Counted() {
			got = append(got, r.ENIID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// distrust is judge without evidence beside the proof.
func (t TrustCheck) distrust(e awstypes.ENI, nodeENI string) (reason, detail string) {
	j := t.Judge(e, nodeENI, Evidence{})
	return j.Reason, j.Detail
}

// TestBirthEvidence: a birth proof makes an ENI the operator's only with
// evidence no other principal can produce (births.go): this process's
// create answer, or a nonce its ENINode recorded that no other ENI
// shows; an ENINode entry vouches for its ENI even when the proof is
// gone, and nothing else does.
func TestBirthEvidence(t *testing.T) {
	check := TrustCheck{Cluster: "prod", Keys: testenv.KeyRing("k1")}
	genuine := awstypes.ENI{ID: "eni-genuine", SubnetID: "subnet-a", InterfaceType: "interface", Status: "available",
		Tags: map[string]string{TagCluster: "prod", TagNodeENI: "multus", TagNodeENIUID: "uid-1", TagNode: "n1",
			TagInstance: "i-1", TagDeviceIndex: "1", TagDeviceIndexBase: "1", TagCreatedAt: "2026-11-27T01:00:00Z", TagNonce: "nonce-1"}}
	genuine.Tags[TagProof] = check.Keys.SignBirth(BirthClaim(genuine))
	copyOf := func(id string, mutate func(*awstypes.ENI)) awstypes.ENI {
		e := genuine
		e.ID, e.Tags = id, maps.Clone(genuine.Tags)
		if mutate != nil {
			mutate(&e)
		}
		return e
	}
	pending := map[string]NodeCreate{"nonce-1": {Node: "n1", CreateRecord: v1alpha1.CreateRecord{Nonce: "nonce-1", NodeENI: "multus", SubnetID: "subnet-a", DeviceIndex: 1}}}
	entry := map[string]v1alpha1.ENIAttachment{"eni-genuine": {NodeENI: "multus", NodeID: "n1", InstanceID: "i-1", ENIID: "eni-genuine", SubnetID: "subnet-a", DeviceIndex: 1}}
	other := testenv.KeyRing("k9")
	boundTo := func(id string) Records {
		p := pending["nonce-1"]
		p.ENIID = id
		return Records{Creates: map[string]NodeCreate{"nonce-1": p}, Bound: map[string]NodeCreate{id: p}}
	}
	for _, tc := range []struct {
		name        string
		list        []awstypes.ENI // the ENIs in view; the first is judged
		ev          Evidence
		want        string
		wantRestore bool
	}{
		{"no evidence: a copy of a deleted ENI's tags", []awstypes.ENI{genuine}, Evidence{}, UntrustedUnbound, false},
		{"this process's create answer", []awstypes.ENI{genuine}, Evidence{Born: map[string]string{"nonce-1": "eni-genuine"}}, "", false},
		{"a copy while the answer names the genuine ENI", []awstypes.ENI{copyOf("eni-copy", nil), genuine},
			Evidence{Born: map[string]string{"nonce-1": "eni-genuine"}, Records: Records{Creates: pending}}, UntrustedCopied, false},
		{"the one ENI showing a recorded nonce (a crash's leftover)", []awstypes.ENI{genuine}, Evidence{Records: Records{Creates: pending}}, "", false},
		{"two ENIs showing a recorded nonce: neither", []awstypes.ENI{genuine, copyOf("eni-copy", nil)}, Evidence{Records: Records{Creates: pending}}, UntrustedSharedNonce, false},
		{"the copy of two", []awstypes.ENI{copyOf("eni-copy", nil), genuine}, Evidence{Records: Records{Creates: pending}}, UntrustedSharedNonce, false},
		{"recorded for another index", []awstypes.ENI{copyOf("eni-x", func(e *awstypes.ENI) {
			e.Tags[TagDeviceIndex] = "2"
			e.Tags[TagProof] = check.Keys.SignBirth(BirthClaim(*e))
		})}, Evidence{Records: Records{Creates: pending}}, UntrustedUnbound, false},
		{"a copy onto an ENI of another subnet", []awstypes.ENI{copyOf("eni-x", func(e *awstypes.ENI) { e.SubnetID = "subnet-b" })},
			Evidence{Records: Records{Creates: pending}}, UntrustedBadProof, false},
		{"its entry, proof valid", []awstypes.ENI{genuine, copyOf("eni-copy", nil)}, Evidence{Records: Records{Entries: entry}}, "", false},
		{"a copy of an ENI its entry names", []awstypes.ENI{copyOf("eni-copy", nil), genuine}, Evidence{Records: Records{Entries: entry}}, UntrustedUnbound, false},
		{"its entry, proof tag removed: restored", []awstypes.ENI{copyOf("eni-genuine", func(e *awstypes.ENI) { delete(e.Tags, TagProof) })},
			Evidence{Records: Records{Entries: entry}}, "", true},
		{"its entry, proof of a lost key: restored", []awstypes.ENI{copyOf("eni-genuine", func(e *awstypes.ENI) { e.Tags[TagProof] = other.SignBirth(BirthClaim(genuine)) })},
			Evidence{Records: Records{Entries: entry}}, "", true},
		{"its entry, but its index tag changed: not vouched", []awstypes.ENI{copyOf("eni-genuine", func(e *awstypes.ENI) { e.Tags[TagDeviceIndex] = "3" })},
			Evidence{Records: Records{Entries: entry}}, UntrustedBadProof, false},
		{"a copy without the proof, the entry naming the genuine", []awstypes.ENI{copyOf("eni-copy", func(e *awstypes.ENI) { delete(e.Tags, TagProof) })},
			Evidence{Records: Records{Entries: entry}}, UntrustedUnproven, false},
		{"its record bound to it, no entry (an entry removed), proof gone: restored", []awstypes.ENI{copyOf("eni-genuine", func(e *awstypes.ENI) { delete(e.Tags, TagProof) })},
			Evidence{Records: boundTo("eni-genuine")}, "", true},
		{"a copy of an ENI its record is bound to", []awstypes.ENI{copyOf("eni-copy", nil), genuine}, Evidence{Records: boundTo("eni-genuine")}, UntrustedCopied, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, v := SplitTrusted(check, tc.list, func(e awstypes.ENI) awstypes.ENI { return e }, func(awstypes.ENI) string { return "multus" }, tc.ev)
			id := tc.list[0].ID
			if v.Reasons[id] != tc.want || v.Restore[id] != tc.wantRestore {
				t.Fatalf("reason %q (%s), restore %v; want %q, restore %v", v.Reasons[id], v.Details[id], v.Restore[id], tc.want, tc.wantRestore)
			}
		})
	}
}

func TestUpdateCreate(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	rec := func(age time.Duration, eni string) v1alpha1.CreateRecord {
		return v1alpha1.CreateRecord{Nonce: "n", Since: metav1.NewTime(now.Add(-age)), ENIID: eni}
	}
	for _, tc := range []struct {
		name     string
		c        v1alpha1.CreateRecord
		showing  []string
		attached map[string]bool
		settled  bool
		keep     bool
		bound    string
	}{
		{"just recorded, no ENI seen yet", rec(time.Second, ""), nil, nil, false, true, ""},
		{"its ENI shown, not attached yet", rec(time.Second, ""), []string{"eni-1"}, nil, false, true, ""},
		{"its ENI attached: bound", rec(time.Second, ""), []string{"eni-1"}, map[string]bool{"eni-1": true}, false, true, "eni-1"},
		{"two ENIs show it: not bound", rec(time.Second, ""), []string{"eni-1", "eni-2"}, map[string]bool{"eni-1": true}, false, true, ""},
		{"bound, its ENI still there long after", rec(time.Hour, "eni-1"), []string{"eni-1"}, map[string]bool{"eni-1": true}, false, true, "eni-1"},
		{"an unbound ENI shows it long after", rec(time.Hour, ""), []string{"eni-1"}, nil, false, true, ""},
		{"no ENI after the window", rec(NonceWindow, ""), nil, nil, false, false, ""},
		{"bound, its ENI gone", rec(time.Hour, "eni-1"), nil, nil, false, false, "eni-1"},
		{"its ENI deleted, or its create refused or never sent, here", rec(time.Second, ""), nil, nil, true, false, ""},
	} {
		got, keep := UpdateCreate(tc.c, tc.showing, tc.attached, tc.settled, now)
		if keep != tc.keep || got.ENIID != tc.bound {
			t.Errorf("%s: keep %v, bound to %q; want %v, %q", tc.name, keep, got.ENIID, tc.keep, tc.bound)
		}
	}
}

func TestOwnershipCondition(t *testing.T) {
	c := OwnershipCondition(nil, []Action{{Kind: ActProve, ENI: "eni-1"}}, 3)
	if c.Status != metav1.ConditionTrue || c.Reason != ReasonVerified || c.ObservedGeneration != 3 {
		t.Errorf("nothing untrusted, a rotation's re-sign: %+v", c)
	}
	c = OwnershipCondition(nil, []Action{{Kind: ActProve, ENI: "eni-1", Reason: ProofRestored}}, 3)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonProofRestore || !strings.Contains(c.Message, "eni-1") ||
		!strings.Contains(c.Message, "docs/operations.md#ownership-keys") {
		t.Errorf("a restore under way: %+v", c)
	}
	c = OwnershipCondition(map[string]string{"eni-b": UntrustedBadProof, "eni-a": UntrustedBadProof, "eni-c": UntrustedUnbound}, nil, 3)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonUntrusted ||
		!strings.Contains(c.Message, "3 ENIs") || !strings.Contains(c.Message, "BadProof: eni-a, eni-b; UnboundNonce: eni-c") {
		t.Errorf("untrusted ENIs: %+v", c)
	}
}
