package security

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/kit/testenv/operatorenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// TestIssue36GeneratedRangeHoldsNoENIAddress replays issue 36's finding
// 4 on the whole operator: the generated whereabouts range handed out
// the subnet whole, the NodeENI's own ENIs' primary addresses included,
// which real whereabouts would give to the first pods. With
// multus.podAddressReservation the range is an explicit reservation EC2
// keeps free of ENI addresses: it must hold neither the NodeENI's ENI's
// address nor another tool's ENI's, though EC2 placed both in the subnet.
func TestIssue36GeneratedRangeHoldsNoENIAddress(t *testing.T) {
	ctx := context.Background()
	e := testenv.NewEC2(t, emulator.Options{DetachDelay: 50 * time.Millisecond}, testenv.DefaultWorld(
		testenv.OnlySubnets("nodes-a", "multus-a"), testenv.WithNodes(1, "m5.xlarge"),
		testenv.WithENIs(emulator.NetworkInterfaceSpec{Subnet: "multus-a", PrivateIP: "10.0.47.130"})))
	instance := e.World.Instances[0].ID
	reader := e.Client(ec2.Config{VPCID: e.VPC, QPS: 1000, Burst: 1000})

	cl := operatorenv.NewOneNode(t, "prod", instance)
	if _, err := envtest.InstallCRDs(cl.Env.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(testenv.Root(t), "internal", "attachdefs", "testdata")}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	testenv.CreateNamespaces(t, cl.K8s, "cnf")
	testenv.UpdateNodeENISpec(t, cl.K8s, cl.NodeENI.Name, func(s *v1alpha1.NodeENISpec) {
		s.InterfaceName = "data"
		s.Multus = &v1alpha1.MultusSpec{AttachmentDefinition: &v1alpha1.AttachmentDefinitionSpec{Namespaces: []string{"cnf"}},
			PodAddressReservation: &v1alpha1.PodAddressReservationSpec{PrefixLength: 26}}
	})
	oc := cl.Config(e.VPC)
	oc.Registerer = prometheus.NewRegistry() // one operator after another in this process
	cl.Start(t, e.URL, oc)

	var first, last netip.Addr
	eventually(t, "the definition's range", func() (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("k8s.cni.cncf.io/v1")
		u.SetKind("NetworkAttachmentDefinition")
		if err := cl.K8s.Get(ctx, client.ObjectKey{Namespace: "cnf", Name: cl.NodeENI.Name}, u); err != nil {
			return false, err.Error()
		}
		raw, _, _ := unstructured.NestedString(u.Object, "spec", "config")
		var cfg struct {
			IPAM struct {
				Start string `json:"range_start"`
				End   string `json:"range_end"`
			} `json:"ipam"`
		}
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			return false, err.Error()
		}
		first, _ = netip.ParseAddr(cfg.IPAM.Start)
		last, _ = netip.ParseAddr(cfg.IPAM.End)
		// The whole subnet less AWS's five is what the range was before.
		return first.IsValid() && first != netip.MustParseAddr("10.0.32.4"), raw
	})
	var own awstypes.ENI
	eventually(t, "the NodeENI's ENI", func() (bool, string) {
		enis, err := reader.ListENIs(ctx, ec2.Filter{Name: "tag:" + eniplan.TagCluster, Values: []string{cl.Cluster}})
		if err != nil || len(enis) != 1 {
			return false, fmt.Sprint(enis, err)
		}
		own = enis[0]
		return true, ""
	})
	in := func(ip string) bool { a := netip.MustParseAddr(ip); return !a.Less(first) && !last.Less(a) }
	for _, ip := range []string{own.PrimaryIP, "10.0.47.130"} {
		if in(ip) {
			t.Errorf("the pods' range %s-%s holds the ENI address %s", first, last, ip)
		}
	}
	list, err := reader.ListSubnetCIDRReservations(ctx, e.Subnets["multus-a"])
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Type != "explicit" || list[0].CIDR != netip.PrefixFrom(first, 26).String() {
		t.Errorf("reservations %+v, want one explicit /26 from %s", list, first)
	}
}
