package attachdefs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

func nodeENI(ad *v1alpha1.AttachmentDefinitionSpec, subnets ...v1alpha1.ResolvedSubnet) *v1alpha1.NodeENI {
	return &v1alpha1.NodeENI{
		ObjectMeta: metav1.ObjectMeta{Name: "storage"},
		Spec:       v1alpha1.NodeENISpec{InterfaceName: "multus", Multus: &v1alpha1.MultusSpec{AttachmentDefinition: ad}},
		Status:     v1alpha1.NodeENIStatus{Subnets: subnets},
	}
}

func subnet(id, zone, cidr string) v1alpha1.ResolvedSubnet {
	return v1alpha1.ResolvedSubnet{ID: id, Zone: zone, CIDR: cidr}
}

// decoded is a configuration as JSON values, to compare field by field.
func decoded(t *testing.T, config string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(config), &m); err != nil {
		t.Fatalf("config is not JSON: %v: %s", err, config)
	}
	return m
}

func TestWantedNamesOneDefinitionPerNamespaceAndSubnet(t *testing.T) {
	a := subnet("subnet-0a", "eu-west-1a", "10.0.1.0/24")
	b := subnet("subnet-0b", "eu-west-1b", "10.0.2.0/24")
	cases := []struct {
		name string
		ne   *v1alpha1.NodeENI
		want []string // namespace/name
	}{
		{"no multus", &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: "storage"}}, nil},
		{"subnets not resolved yet", nodeENI(&v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{"apps"}}), nil},
		{"one subnet: the NodeENI's name", nodeENI(&v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{"apps", "db"}}, a),
			[]string{"apps/storage", "db/storage"}},
		{"the name asked for", nodeENI(&v1alpha1.AttachmentDefinitionSpec{Name: "fast", Namespaces: []string{"apps"}}, a),
			[]string{"apps/fast"}},
		{"several subnets: the subnet's ID appended", nodeENI(&v1alpha1.AttachmentDefinitionSpec{Name: "fast", Namespaces: []string{"apps", "db"}}, a, b),
			[]string{"apps/fast-subnet-0a", "apps/fast-subnet-0b", "db/fast-subnet-0a", "db/fast-subnet-0b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defs, err := Wanted(tc.ne)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range defs {
				got = append(got, d.Key())
				if decoded(t, d.Config)["name"] != d.Name {
					t.Errorf("%s: the configuration's name is not the definition's: %s", d.Key(), d.Config)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("definitions %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWantedRefusesANodeENINameNoLabelHolds(t *testing.T) {
	ne := nodeENI(&v1alpha1.AttachmentDefinitionSpec{Name: "short", Namespaces: []string{"apps"}}, subnet("subnet-1", "a", "10.0.1.0/24"))
	ne.Name = strings.Repeat("n", 64)
	if _, err := Wanted(ne); err == nil || !strings.Contains(err.Error(), "shorter name") {
		t.Errorf("error %v, want one asking for a shorter name", err)
	}
}

func TestWantedMastersFollowTheAgentsNamesPerZone(t *testing.T) {
	ne := nodeENI(&v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{"apps"}},
		subnet("subnet-1", "a", "10.0.1.0/24"), subnet("subnet-2", "b", "10.0.2.0/24"),
		subnet("subnet-3", "a", "10.0.3.0/24"), subnet("subnet-4", "a", "10.0.4.0/24"),
		subnet("subnet-5", "b", "10.0.5.0/24"))
	defs, err := Wanted(ne)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"subnet-1": "multus", "subnet-2": "multus", "subnet-3": "multus1", "subnet-4": "multus2", "subnet-5": "multus1"}
	for _, d := range defs {
		if got := decoded(t, d.Config)["master"]; got != want[d.SubnetID] {
			t.Errorf("%s: master %v, want %s", d.SubnetID, got, want[d.SubnetID])
		}
	}
}

func TestWantedPluginConfigurations(t *testing.T) {
	s := subnet("subnet-0a", "a", "10.0.1.0/24")
	cases := []struct {
		name string
		ad   v1alpha1.AttachmentDefinitionSpec
		want string // the configuration without its ipam
	}{
		{"ipvlan by default, l2", v1alpha1.AttachmentDefinitionSpec{},
			`{"cniVersion":"0.3.1","name":"storage","type":"ipvlan","master":"multus","mode":"l2"}`},
		{"ipvlan l3", v1alpha1.AttachmentDefinitionSpec{Type: "ipvlan", Mode: "l3"},
			`{"cniVersion":"0.3.1","name":"storage","type":"ipvlan","master":"multus","mode":"l3"}`},
		{"macvlan bridge by default", v1alpha1.AttachmentDefinitionSpec{Type: "macvlan"},
			`{"cniVersion":"0.3.1","name":"storage","type":"macvlan","master":"multus","mode":"bridge"}`},
		{"macvlan private", v1alpha1.AttachmentDefinitionSpec{Type: "macvlan", Mode: "private"},
			`{"cniVersion":"0.3.1","name":"storage","type":"macvlan","master":"multus","mode":"private"}`},
		{"host-device moves the interface", v1alpha1.AttachmentDefinitionSpec{Type: "host-device"},
			`{"cniVersion":"0.3.1","name":"storage","type":"host-device","device":"multus"}`},
		{"static: pods name their address", v1alpha1.AttachmentDefinitionSpec{IPAM: "static"},
			`{"cniVersion":"0.3.1","name":"storage","type":"ipvlan","master":"multus","mode":"l2","capabilities":{"ips":true}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.ad.Namespaces = []string{"apps"}
			defs, err := Wanted(nodeENI(&tc.ad, s))
			if err != nil {
				t.Fatal(err)
			}
			got := decoded(t, defs[0].Config)
			delete(got, "ipam")
			if want := decoded(t, tc.want); !reflect.DeepEqual(got, want) {
				t.Errorf("config %v, want %v", got, want)
			}
		})
	}
}

func TestWantedIPAM(t *testing.T) {
	cases := []struct {
		name    string
		ad      v1alpha1.AttachmentDefinitionSpec
		subnet  v1alpha1.ResolvedSubnet
		want    string
		wantErr string
	}{
		{name: "whereabouts /24: AWS's first four and last left out",
			subnet: subnet("subnet-1", "a", "10.0.1.0/24"),
			want:   `{"type":"whereabouts","range":"10.0.1.0/24","range_start":"10.0.1.4","range_end":"10.0.1.254"}`},
		{name: "whereabouts /28",
			subnet: subnet("subnet-1", "a", "10.0.1.32/28"),
			want:   `{"type":"whereabouts","range":"10.0.1.32/28","range_start":"10.0.1.36","range_end":"10.0.1.46"}`},
		{name: "whereabouts with excludes",
			ad:     v1alpha1.AttachmentDefinitionSpec{Exclude: []string{"10.0.1.0/26", "10.0.1.200/32"}},
			subnet: subnet("subnet-1", "a", "10.0.1.0/24"),
			want:   `{"type":"whereabouts","range":"10.0.1.0/24","range_start":"10.0.1.4","range_end":"10.0.1.254","exclude":["10.0.1.0/26","10.0.1.200/32"]}`},
		{name: "IPv6-only /64",
			subnet: v1alpha1.ResolvedSubnet{ID: "subnet-1", Zone: "a", IPv6CIDR: "2600:1f14:abc:de00::/64"},
			want:   `{"type":"whereabouts","range":"2600:1f14:abc:de00::/64","range_start":"2600:1f14:abc:de00::4","range_end":"2600:1f14:abc:de00:ffff:ffff:ffff:fffe"}`},
		{name: "dual stack: ipRanges, each exclude in its family's range",
			ad:     v1alpha1.AttachmentDefinitionSpec{Exclude: []string{"10.0.1.0/26", "2600:1f14:abc:de00::/120"}},
			subnet: v1alpha1.ResolvedSubnet{ID: "subnet-1", Zone: "a", CIDR: "10.0.1.0/24", IPv6CIDR: "2600:1f14:abc:de00::/64"},
			want: `{"type":"whereabouts","ipRanges":[` +
				`{"range":"10.0.1.0/24","range_start":"10.0.1.4","range_end":"10.0.1.254","exclude":["10.0.1.0/26"]},` +
				`{"range":"2600:1f14:abc:de00::/64","range_start":"2600:1f14:abc:de00::4","range_end":"2600:1f14:abc:de00:ffff:ffff:ffff:fffe","exclude":["2600:1f14:abc:de00::/120"]}]}`},
		{name: "static", ad: v1alpha1.AttachmentDefinitionSpec{IPAM: "static"},
			subnet: subnet("subnet-1", "a", "10.0.1.0/24"), want: `{"type":"static"}`},
		{name: "a subnet without CIDR", subnet: subnet("subnet-1", "a", ""), wantErr: "subnet subnet-1: the subnet has no CIDR"},
		{name: "an exclude that is no CIDR", ad: v1alpha1.AttachmentDefinitionSpec{Exclude: []string{"10.0.1.300"}},
			subnet: subnet("subnet-1", "a", "10.0.1.0/24"), wantErr: `exclude "10.0.1.300" is not a CIDR`},
		{name: "a /30 leaves nothing", subnet: subnet("subnet-1", "a", "10.0.1.0/30"), wantErr: "leaves no address"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.ad.Namespaces = []string{"apps"}
			defs, err := Wanted(nodeENI(&tc.ad, tc.subnet))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := decoded(t, defs[0].Config)["ipam"]
			var want any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ipam %v\nwant %v", got, want)
			}
		})
	}
}

func TestWantedConfigIsStable(t *testing.T) {
	ne := nodeENI(&v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{"apps"}, Exclude: []string{"10.0.1.0/26"}},
		v1alpha1.ResolvedSubnet{ID: "subnet-1", Zone: "a", CIDR: "10.0.1.0/24", IPv6CIDR: "2600::/64"})
	first, _ := Wanted(ne)
	for range 20 {
		again, _ := Wanted(ne)
		if again[0].Config != first[0].Config {
			t.Fatalf("configuration changed between two calls: %s, then %s", first[0].Config, again[0].Config)
		}
	}
}

// With multus.podAddressReservation, whereabouts hands out only the
// reserved range's addresses, with the subnet's prefix; until the range
// is reserved nothing is wanted (the existing definitions stay).
func TestWantedHandsOutOnlyTheReservedRange(t *testing.T) {
	ad := v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{"apps"}}
	ne := nodeENI(&ad, v1alpha1.ResolvedSubnet{ID: "subnet-1", Zone: "a", CIDR: "10.0.40.0/24", IPv6CIDR: "2600::/64"})
	ne.Spec.Multus.PodAddressReservation = &v1alpha1.PodAddressReservationSpec{PrefixLength: 26}
	if _, err := Wanted(ne); err == nil || !strings.Contains(err.Error(), "waiting for the pods' range to be reserved in subnet subnet-1") {
		t.Fatalf("before the reservation: %v", err)
	}
	ne.Status.PodAddressReservations = []v1alpha1.PodAddressReservationStatus{{SubnetID: "subnet-1", ID: "scr-1", CIDR: "10.0.40.128/26"}}
	defs, err := Wanted(ne)
	if err != nil {
		t.Fatal(err)
	}
	got := decoded(t, defs[0].Config)["ipam"]
	var want any
	_ = json.Unmarshal([]byte(`{"type":"whereabouts","ipRanges":[{"range":"10.0.40.0/24","range_start":"10.0.40.128","range_end":"10.0.40.191"},`+
		`{"range":"2600::/64","range_start":"2600::4","range_end":"2600::ffff:ffff:ffff:fffe"}]}`), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ipam %v\nwant %v", got, want)
	}
	ne.Status.PodAddressReservations[0].CIDR = "10.0.41.0/26"
	if _, err := Wanted(ne); err == nil || !strings.Contains(err.Error(), "not inside the subnet") {
		t.Errorf("a range outside the subnet: %v", err)
	}
}
