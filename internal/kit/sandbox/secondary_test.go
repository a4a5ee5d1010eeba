package sandbox

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/attachdefs"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
)

// The demo world tags exactly one subnet for the secondary network, in
// a zone with instances: the sandbox's NodeENI selects it by those tags.
func TestDemoWorldTagsTheSecondarySubnet(t *testing.T) {
	b, err := os.ReadFile("../../../hack/demo/world.json")
	if err != nil {
		t.Fatal(err)
	}
	var w emulator.World
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	var tagged []emulator.SubnetSpec
	for _, s := range w.Subnets {
		if s.Tags[secondaryTagKey] == secondaryTagValue {
			tagged = append(tagged, s)
		}
	}
	if len(tagged) != 1 {
		t.Fatalf("%d subnets tagged %s=%s, want 1", len(tagged), secondaryTagKey, secondaryTagValue)
	}
	zones := map[string]bool{}
	for _, s := range w.Subnets {
		for _, i := range w.Instances {
			if i.Subnet == s.Name {
				zones[s.AvailabilityZone] = true
			}
		}
	}
	if !zones[tagged[0].AvailabilityZone] {
		t.Errorf("no instance in zone %s of the tagged subnet", tagged[0].AvailabilityZone)
	}
}

// The NodeENI asks for what the demo shows, and the definition the
// operator writes for it (attachdefs.Wanted) gives the sandbox a
// whereabouts range to take the pod's address from: its first address
// no ENI holds.
func TestSecondaryNodeENIAndAddress(t *testing.T) {
	ne := secondaryNodeENI("us-east-1a")
	m := ne.Spec.Multus
	if len(ne.Spec.SubnetSelector) != 1 || ne.Spec.SubnetSelector[0].Tags[secondaryTagKey] != secondaryTagValue || ne.Spec.InterfaceName == "" ||
		m == nil || !m.RegisterPodAddresses || m.AttachmentDefinition == nil || len(m.AttachmentDefinition.Namespaces) != 1 {
		t.Fatalf("NodeENI spec %+v", ne.Spec)
	}
	if m.PodAddressReservation == nil || m.PodAddressReservation.PrefixLength != 27 {
		t.Fatalf("no /27 pods' range asked for: %+v", m.PodAddressReservation)
	}
	ne.Status.Subnets = []v1alpha1.ResolvedSubnet{{ID: "subnet-0123456789abcdef0", Zone: "us-east-1a", CIDR: "10.0.40.0/24"}}
	ne.Status.PodAddressReservations = []v1alpha1.PodAddressReservationStatus{{SubnetID: "subnet-0123456789abcdef0", ID: "scr-1", CIDR: "10.0.40.4/30"}}
	defs, err := attachdefs.Wanted(ne)
	if err != nil || len(defs) != 1 {
		t.Fatalf("Wanted: %v, %v", defs, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"config": defs[0].Config}}}
	cfg, err := parseDefConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Master != secondaryInterface || cfg.IPAM.Range != "10.0.40.0/24" {
		t.Errorf("config %+v", cfg)
	}
	enis := []awstypes.ENI{{PrimaryIP: "10.0.40.4"}, {PrimaryIP: "10.0.40.5", SecondaryIPs: []string{"10.0.40.6"}}}
	addr, err := freeAddress(cfg, enis)
	if err != nil || addr != netip.MustParseAddr("10.0.40.7") {
		t.Errorf("freeAddress = %v, %v; want 10.0.40.7", addr, err)
	}
	cfg.IPAM.RangeEnd = "10.0.40.6"
	if addr, err := freeAddress(cfg, enis); err == nil {
		t.Errorf("freeAddress of a full range = %v", addr)
	}
}

// The report shows the NodeENI's registration and definitions, the
// definition (namespace, name, master, range) and the Multus pod's
// address with the ENI holding it.
func TestReportSecondaryNetwork(t *testing.T) {
	ne := v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: "data-plane"}, Status: v1alpha1.NodeENIStatus{ReadyNodes: 2, DesiredNodes: 2,
		Conditions: []metav1.Condition{
			{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Attached"},
			{Type: v1alpha1.ConditionPodAddressesRegistered, Status: metav1.ConditionTrue, Reason: "Registered", Message: "Multus pod addresses registered: 1, on the ENIs of 2 nodes"},
			{Type: v1alpha1.ConditionAttachmentDefinitionsReady, Status: metav1.ConditionTrue, Reason: "Synced", Message: "NetworkAttachmentDefinitions written: 1, in namespaces cnf"},
		}}}
	r := buildReport(nil, nil, []v1alpha1.NodeENI{ne}, nil, nil)
	r.defs = []defRow{{namespace: "cnf", name: "data-plane", nodeENI: "data-plane", typ: "ipvlan l2", master: "data", ipam: "whereabouts 10.0.40.0/24 (10.0.40.4-10.0.40.254)"}}
	r.multus = []multusRow{{pod: "cnf/cnf-0", node: "node-a1", network: "cnf/data-plane", iface: "net1", mac: "02:00:00:00:00:01",
		addr: "10.0.40.6", eni: "eni-0123", assigned: "secondary private IP", gate: "True Registered"}}
	var b bytes.Buffer
	r.print(&b)
	for _, want := range []string{
		"data-plane  2            2        True Attached    True Registered  True Synced",
		"data-plane: PodAddressesRegistered: Multus pod addresses registered: 1, on the ENIs of 2 nodes",
		"cnf        data-plane  data-plane  ipvlan l2  data    whereabouts 10.0.40.0/24 (10.0.40.4-10.0.40.254)",
		"cnf/cnf-0  node-a1  cnf/data-plane  net1       02:00:00:00:00:01  10.0.40.6  eni-0123  secondary private IP  True Registered",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, b.String())
		}
	}
}
