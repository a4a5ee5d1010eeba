package tagger

import (
	"maps"
	"strings"
	"testing"

	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/tagkeys"
)

// importRecord records only tags the ENI's token proves the original
// wrote for the pod, never a reserved key, never on a NodeENI interface
// or outside --subnet-ids, whatever the (craftable) cache entry says.
func TestImportRecord(t *testing.T) {
	base := map[string]string{"Name": "branch", "aws:cloudformation:stack-name": "s"}
	pod := map[string]string{"Team": "Dev", "shop:Cost": "42"}
	with := func(ms ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			maps.Copy(out, m)
		}
		return out
	}
	token := map[string]string{HashTag: K8sENITaggerHash(pod)}
	for _, tt := range []struct {
		name    string
		before  map[string]string
		eni     map[string]string
		subnet  string
		want    map[string]string
		refused string
	}{
		{name: "proven", before: base, eni: with(base, pod, token), want: pod},
		{name: "reserved keys added since are not the pod's", before: base,
			eni: with(base, pod, token, map[string]string{"kubernetes.io/cluster/x": "owned", "eni-tagger.io/other": "x"}), want: pod},
		{name: "an entry claiming an empty ENI", before: nil, eni: with(base, pod, token), refused: "not the hash"},
		{name: "a tag changed since", before: base, eni: with(base, pod, token, map[string]string{"Team": "Ops"}), refused: "not the hash"},
		{name: "a token over reserved keys", before: nil,
			eni: map[string]string{"aws:x": "1", HashTag: K8sENITaggerHash(map[string]string{"aws:x": "1"})}, refused: "not the hash"},
		{name: "NodeENI interface", before: base, eni: with(base, pod, token, map[string]string{"eni-operator.io/cluster": "c"}), refused: "NodeENI"},
		{name: "no token", before: base, eni: with(base, pod), refused: "no eni-tagger.io/hash"},
		{name: "subnet not wanted", before: base, eni: with(base, pod, token), subnet: "subnet-other", refused: "--subnet-ids"},
	} {
		c := importCandidate{IP: "10.0.0.1", UID: "0b0e6c4e-8d7c-4a53-9a55-2f5c7b6f0a11", ENI: "eni-0123456789abcdef0", Before: tt.before}
		subnet := tt.subnet
		if subnet == "" {
			subnet = "subnet-wanted"
		}
		rec, why := importRecord(c, awstypes.ENI{ID: c.ENI, SubnetID: subnet, Tags: tt.eni}, map[string]bool{"subnet-wanted": true})
		switch {
		case tt.refused != "" && (why == "" || !strings.Contains(why, tt.refused)):
			t.Errorf("%s: %q, %+v; want refused with %q", tt.name, why, rec, tt.refused)
		case tt.refused == "" && (why != "" || !maps.Equal(rec.Tags, tt.want) || rec.Hash != tt.eni[HashTag] || rec.UID != c.UID || rec.ENI != c.ENI):
			t.Errorf("%s: %q, %+v; want tags %v", tt.name, why, rec, tt.want)
		}
		for k := range rec.Tags {
			if tagkeys.IsReserved(k) {
				t.Errorf("%s: reserved key %s recorded", tt.name, k)
			}
		}
	}
}
