package v1alpha1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
)

// shared is the package's control plane, started by the first test
// that needs one.
var shared testenv.Shared

func TestMain(m *testing.M) { testenv.Main(m, &shared) }

var gvr = schema.GroupVersionResource{Group: "networking.k8s.aws", Version: "v1alpha1", Resource: "nodeenis"}

func dyn(t *testing.T) dynamic.ResourceInterface {
	t.Helper()
	dc, err := dynamic.NewForConfig(shared.Env(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	return dc.Resource(gvr)
}

// valid is a spec every case starts from.
func valid() map[string]any {
	return map[string]any{
		"nodeSelector":     map[string]any{"ng": "multi-eni"},
		"subnetID":         "subnet-0123456789abcdef0",
		"securityGroupIDs": []any{"sg-0123456789abcdef0"},
	}
}

func create(t *testing.T, name string, spec map[string]any) error {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.aws/v1alpha1", "kind": "NodeENI",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	_, err := dyn(t).Create(context.Background(), u, metav1.CreateOptions{})
	if err == nil {
		_ = dyn(t).Delete(context.Background(), name, metav1.DeleteOptions{})
	}
	return err
}

// Every invalid spec is refused at admission with a message that says
// what is wrong.
func TestAdmissionRefusesInvalidSpecs(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s map[string]any)
		want   string // substring of the refusal
	}{
		{"no subnet source", func(s map[string]any) { delete(s, "subnetID") }, "a subnet is required"},
		{"empty subnet lists", func(s map[string]any) {
			delete(s, "subnetID")
			s["subnetIDs"], s["subnetNames"] = []any{}, []any{}
		}, "a subnet is required"},
		{"no security group source", func(s map[string]any) { delete(s, "securityGroupIDs") }, "a security group is required"},
		{"malformed subnetID", func(s map[string]any) { s["subnetID"] = "subnet-XYZ" }, "spec.subnetID"},
		{"subnetID without prefix", func(s map[string]any) { s["subnetID"] = "0123456789abcdef0" }, "spec.subnetID"},
		{"malformed subnetIDs item", func(s map[string]any) { s["subnetIDs"] = []any{"subnet-0123456789abcdef0", "sub-1"} }, "spec.subnetIDs[1]"},
		{"malformed security group", func(s map[string]any) { s["securityGroupIDs"] = []any{"sg-12"} }, "spec.securityGroupIDs[0]"},
		{"security group with a subnet ID", func(s map[string]any) { s["securityGroupIDs"] = []any{"subnet-0123456789abcdef0"} }, "spec.securityGroupIDs[0]"},
		{"deviceIndex 0 (the primary ENI)", func(s map[string]any) { s["deviceIndex"] = 0 }, "spec.deviceIndex"},
		{"deviceIndex negative", func(s map[string]any) { s["deviceIndex"] = -1 }, "spec.deviceIndex"},
		{"deviceIndex above the largest ENI limit", func(s map[string]any) { s["deviceIndex"] = v1alpha1.MaxDeviceIndex + 1 }, "spec.deviceIndex"},
		{"mtu below 576", func(s map[string]any) { s["mtu"] = 575 }, "spec.mtu"},
		{"mtu above 9001", func(s map[string]any) { s["mtu"] = 9002 }, "spec.mtu"},
		{"malformed dpdkPCIAddress", func(s map[string]any) { s["dpdkPCIAddress"] = "00:06.0" }, "spec.dpdkPCIAddress"},
		{"dpdkPCIAddress with a bad function", func(s map[string]any) { s["dpdkPCIAddress"] = "0000:00:06.8" }, "spec.dpdkPCIAddress"},
		{"reserved tag aws:", func(s map[string]any) { s["tags"] = map[string]any{"aws:cloudformation:stack": "x"} }, "reserved"},
		{"reserved tag, other case", func(s map[string]any) { s["tags"] = map[string]any{"AWS:Foo": "x"} }, "reserved"},
		{"reserved tag of the operator", func(s map[string]any) { s["tags"] = map[string]any{"eni-operator.io/node": "x"} }, "reserved"},
		{"reserved tag of the cluster", func(s map[string]any) { s["tags"] = map[string]any{"kubernetes.io/cluster/prod": "owned"} }, "reserved"},
		{"reserved tag no_manage", func(s map[string]any) { s["tags"] = map[string]any{"node.k8s.amazonaws.com/no_manage": "false"} }, "reserved"},
		{"reserved tag of the VPC CNI", func(s map[string]any) { s["tags"] = map[string]any{"cluster.k8s.amazonaws.com/name": "x"} }, "reserved"},
		{"reserved tag of the tagger", func(s map[string]any) { s["tags"] = map[string]any{"ENI-Tagger.io/hash": "x"} }, "reserved"},
		{"reserved tag of Karpenter", func(s map[string]any) { s["tags"] = map[string]any{"karpenter.sh/nodepool": "x"} }, "reserved"},
		{"reserved tag of the autoscaler", func(s map[string]any) { s["tags"] = map[string]any{"k8s.io/cluster-autoscaler/enabled": "true"} }, "reserved"},
		{"reserved tag of the LB controller", func(s map[string]any) { s["tags"] = map[string]any{"elbv2.k8s.aws/cluster": "x"} }, "reserved"},
		{"reserved tag of EKS", func(s map[string]any) { s["tags"] = map[string]any{"eks-cluster-name": "x"} }, "reserved"},
		{"tag key too long", func(s map[string]any) { s["tags"] = map[string]any{strings.Repeat("k", 128): "x"} }, "tag keys must be"},
		{"tag value too long", func(s map[string]any) { s["tags"] = map[string]any{"team": strings.Repeat("v", 257)} }, "spec.tags.team: Too long"},
		// Issue 25: NULs made the controller's NUL-joined tag encoding
		// write kubernetes.io/cluster/victim-cluster=owned.
		{"tag value smuggling reserved keys with NUL", func(s map[string]any) {
			s["tags"] = map[string]any{"Team": "x\x00kubernetes.io/cluster/victim-cluster\x00owned\x00karpenter.sh/nodepool\x00evil"}
		}, "control characters"},
		{"tag key smuggling a reserved key with NUL", func(s map[string]any) {
			s["tags"] = map[string]any{"x\x00kubernetes.io/cluster/victim-cluster": "owned"}
		}, "control characters"},
		{"tag value with a newline", func(s map[string]any) { s["tags"] = map[string]any{"Team": "a\nb"} }, "control characters"},
		{"tag key with a tab", func(s map[string]any) { s["tags"] = map[string]any{"a\tb": "x"} }, "control characters"},
		{"tag value with DEL", func(s map[string]any) { s["tags"] = map[string]any{"Team": "a\x7f"} }, "control characters"},
		{"tag value with a C1 control", func(s map[string]any) { s["tags"] = map[string]any{"Team": "a\u009b"} }, "control characters"},
		{"tag key with a leading space", func(s map[string]any) { s["tags"] = map[string]any{" Team": "x"} }, "white space"},
		{"tag key with a trailing no-break space", func(s map[string]any) { s["tags"] = map[string]any{"Team\u00a0": "x"} }, "white space"},
		{"description too long", func(s map[string]any) { s["description"] = strings.Repeat("d", 256) }, "spec.description"},
		{"no nodeSelector", func(s map[string]any) { delete(s, "nodeSelector") }, "spec.nodeSelector"},
		{"interfaceName too long for a suffix", func(s map[string]any) { s["interfaceName"] = "abcdefghijklmn" }, "spec.interfaceName"},
		{"interfaceName with a slash", func(s map[string]any) { s["interfaceName"] = "a/b" }, "spec.interfaceName"},
		{"interfaceName starting with a digit", func(s map[string]any) { s["interfaceName"] = "0eth" }, "spec.interfaceName"},
		{"subnet selector term with tags and id", func(s map[string]any) {
			s["subnetSelector"] = []any{map[string]any{"tags": map[string]any{"net": "multus"}, "id": "subnet-0123456789abcdef0"}}
		}, "exactly one"},
		{"empty subnet selector term", func(s map[string]any) { s["subnetSelector"] = []any{map[string]any{}} }, "exactly one"},
		{"security group term with id and name", func(s map[string]any) {
			s["securityGroupSelector"] = []any{map[string]any{"id": "sg-0123456789abcdef0", "name": "multus"}}
		}, "exactly one"},
		{"malformed selector subnet id", func(s map[string]any) { s["subnetSelector"] = []any{map[string]any{"id": "sub-1"}} }, "spec.subnetSelector[0].id"},
		{"secondary addresses and prefixes", func(s map[string]any) { s["secondaryPrivateIPv4Count"], s["ipv4PrefixCount"] = 2, 1 }, "not both"},
		{"IPv6 addresses and prefixes", func(s map[string]any) { s["ipv6AddressCount"], s["ipv6PrefixCount"] = 2, 1 }, "not both"},
		{"secondary address count above 49", func(s map[string]any) { s["secondaryPrivateIPv4Count"] = 50 }, "spec.secondaryPrivateIPv4Count"},
		{"network card beyond 15", func(s map[string]any) { s["networkCardIndex"] = 16 }, "spec.networkCardIndex"},
		{"unknown interface type", func(s map[string]any) { s["interfaceType"] = "trunk" }, "spec.interfaceType"},
		{"attachment definition without interfaceName", func(s map[string]any) {
			s["multus"] = map[string]any{"attachmentDefinition": map[string]any{"namespaces": []any{"cnf"}}}
		}, "set interfaceName"},
		{"attachment definition without namespaces", func(s map[string]any) {
			s["interfaceName"] = "multus"
			s["multus"] = map[string]any{"attachmentDefinition": map[string]any{"namespaces": []any{}}}
		}, "spec.multus.attachmentDefinition.namespaces"},
		{"attachment definition of an unknown type", func(s map[string]any) {
			s["interfaceName"] = "multus"
			s["multus"] = map[string]any{"attachmentDefinition": map[string]any{"namespaces": []any{"cnf"}, "type": "bridge"}}
		}, "spec.multus.attachmentDefinition.type"},
		{"an exclude that is no CIDR", func(s map[string]any) {
			s["interfaceName"] = "multus"
			s["multus"] = map[string]any{"attachmentDefinition": map[string]any{"namespaces": []any{"cnf"}, "exclude": []any{"10.0.1.0/28", "10.0.1.7"}}}
		}, "exclude holds CIDRs"},
		{"multus on a DPDK interface", func(s map[string]any) {
			s["enableDPDK"], s["multus"] = true, map[string]any{"registerPodAddresses": true}
		}, "bound to DPDK"},
		{"multus on an efa-only interface", func(s map[string]any) {
			s["interfaceType"], s["multus"] = "efa-only", map[string]any{"registerPodAddresses": true}
		}, "efa-only"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := valid()
			c.mutate(s)
			err := create(t, fmt.Sprintf("invalid-%d", i), s)
			if err == nil {
				t.Fatalf("accepted; want a refusal mentioning %q", c.want)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("refusal %v; want Invalid mentioning %q", err, c.want)
			}
		})
	}
}

// The edges of every range are accepted, and so are specs that use only
// names.
func TestAdmissionAcceptsValidSpecs(t *testing.T) {
	cases := map[string]func(s map[string]any){
		"as is":                    func(map[string]any) {},
		"deviceIndex 1":            func(s map[string]any) { s["deviceIndex"] = 1 },
		"deviceIndex at the limit": func(s map[string]any) { s["deviceIndex"] = v1alpha1.MaxDeviceIndex },
		"mtu 576":                  func(s map[string]any) { s["mtu"] = 576 },
		"mtu 9001":                 func(s map[string]any) { s["mtu"] = 9001 },
		"8-digit IDs":              func(s map[string]any) { s["subnetID"], s["securityGroupIDs"] = "subnet-12345678", []any{"sg-12345678"} },
		"names only": func(s map[string]any) {
			delete(s, "subnetID")
			delete(s, "securityGroupIDs")
			s["subnetNames"], s["securityGroupNames"] = []any{"multus-a", "multus-b"}, []any{"multus"}
		},
		"DPDK": func(s map[string]any) {
			s["enableDPDK"], s["dpdkDriver"], s["dpdkResourceName"], s["dpdkPCIAddress"] = true, "vfio-pci", "intel.com/sriov_dpdk", "0000:00:06.0"
		},
		"interfaceName": func(s map[string]any) { s["interfaceName"] = "multus_data-1" },
		"selectors only": func(s map[string]any) {
			delete(s, "subnetID")
			delete(s, "securityGroupIDs")
			s["subnetSelector"] = []any{map[string]any{"tags": map[string]any{"net": "multus", "tier": "*"}}, map[string]any{"id": "subnet-0123456789abcdef0"}}
			s["securityGroupSelector"] = []any{map[string]any{"tags": map[string]any{"net": "multus"}}, map[string]any{"name": "multus"}}
		},
		"every ENI setting": func(s map[string]any) {
			s["secondaryPrivateIPv4Count"], s["ipv6PrefixCount"], s["networkCardIndex"] = 49, 1, 15
			s["sourceDestCheck"], s["interfaceType"] = false, "efa"
		},
		"multus": func(s map[string]any) {
			s["interfaceName"] = "multus"
			s["multus"] = map[string]any{"registerPodAddresses": true, "attachmentDefinition": map[string]any{
				"namespaces": []any{"cnf", "ran"}, "type": "macvlan", "mode": "bridge", "ipam": "static", "exclude": []any{"10.0.1.0/28"},
			}}
		},
		"user tags": func(s map[string]any) {
			s["tags"] = map[string]any{"Team": "net", "Name": "multus", "cost-center": "42"}
		},
		"user tags with inner and value white space, not ASCII": func(s map[string]any) {
			s["tags"] = map[string]any{"Cost center": " 42 ", "équipe/日本": "naïve ✓", "empty": ""}
		},
	}
	i := 0
	for name, mutate := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			s := valid()
			mutate(s)
			if err := create(t, fmt.Sprintf("valid-%d", i), s); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func typedClient(t *testing.T) client.Client {
	t.Helper()
	sch := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(rest.CopyConfig(shared.Env(t).Config), client.Options{Scheme: sch})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// deleteOnTermination defaults to true, and an explicit false stays false
// whether it is written by kubectl (YAML) or by the Go types.
func TestDefaults(t *testing.T) {
	ctx := context.Background()
	c := typedClient(t)
	no, yes := false, true
	for name, dot := range map[string]*bool{"dot-unset": nil, "dot-false": &no, "dot-true": &yes} {
		n := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeENISpec{
			NodeSelector: map[string]string{}, SubnetID: "subnet-12345678", SecurityGroupIDs: []string{"sg-12345678"},
			DeleteOnTermination: dot,
		}}
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		got := &v1alpha1.NodeENI{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(n), got); err != nil {
			t.Fatal(err)
		}
		want := dot == nil || *dot
		if got.Spec.DeleteOnTermination == nil || *got.Spec.DeleteOnTermination != want {
			t.Errorf("%s: deleteOnTermination = %v, want %v", name, got.Spec.DeleteOnTermination, want)
		}
		if got.Spec.DeviceIndex != 1 {
			t.Errorf("%s: deviceIndex = %d, want the default 1", name, got.Spec.DeviceIndex)
		}
	}
	s := valid()
	s["deleteOnTermination"] = false
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "networking.k8s.aws/v1alpha1", "kind": "NodeENI",
		"metadata": map[string]any{"name": "dot-false-yaml"}, "spec": s}}
	got, err := dyn(t).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, found, _ := unstructured.NestedBool(got.Object, "spec", "deleteOnTermination"); !found || v {
		t.Fatalf("explicit false stored as %v (found %v)", v, found)
	}
}

// The samples of config/samples (the original project's shapes among
// them) are accepted as they are.
func TestSamplesApply(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "*.yaml"))
	if err != nil || len(files) < 4 {
		t.Fatalf("samples: %v %v; want at least 4", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range strings.Split(string(b), "\n---\n") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			js, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatalf("%s[%d]: %v", f, i, err)
			}
			u := &unstructured.Unstructured{}
			if err := json.Unmarshal(js, &u.Object); err != nil {
				t.Fatal(err)
			}
			u.SetName(fmt.Sprintf("sample-%s-%d", strings.TrimSuffix(filepath.Base(f), ".yaml"), i))
			if _, err := dyn(t).Create(context.Background(), u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Errorf("%s[%d]: %v", filepath.Base(f), i, err)
			}
		}
	}
}

// The printer columns show ready and desired nodes, the reasons of the
// Ready and InterfacesConfigured conditions, and the age.
func TestPrinterColumns(t *testing.T) {
	c := typedClient(t)
	ctx := context.Background()
	n := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: "columns"}, Spec: v1alpha1.NodeENISpec{
		NodeSelector: map[string]string{}, SubnetID: "subnet-12345678", SecurityGroupIDs: []string{"sg-12345678"}}}
	if err := c.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	n.Status.DesiredNodes, n.Status.ReadyNodes = 3, 2
	now := metav1.Now()
	n.Status.Conditions = []metav1.Condition{
		{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Progressing", LastTransitionTime: now},
		{Type: v1alpha1.ConditionInterfacesConfigured, Status: metav1.ConditionFalse, Reason: "Pending", LastTransitionTime: now},
	}
	if err := c.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	table := testenv.Table(t, shared.Env(t).Config, "/apis/networking.k8s.aws/v1alpha1/nodeenis/columns")
	var names []string
	for _, col := range table.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if got := strings.Join(names, ","); got != "Name,Ready,Desired,Index,Status,Configured,Age" {
		t.Fatalf("columns %s", got)
	}
	if len(table.Rows) != 1 || fmt.Sprint(table.Rows[0].Cells[:3]) != "[columns 2 3]" ||
		fmt.Sprint(table.Rows[0].Cells[4:6]) != "[Progressing Pending]" {
		t.Fatalf("rows %v; want name, ready 2, desired 3, index, status Progressing, configured Pending", table.Rows)
	}
}

// The node agents write ENINode status.interfaces; the API server bounds
// what they can write, entry by entry and in number, so an agent (or its
// stolen token) cannot fill the object the operator reads and quotes in
// its conditions.
func TestAgentReportsAreBounded(t *testing.T) {
	ctx := context.Background()
	c := typedClient(t)
	en := &v1alpha1.ENINode{ObjectMeta: metav1.ObjectMeta{Name: "bounded-reports"}}
	if err := c.Create(ctx, en); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, en) })
	ok := v1alpha1.InterfaceStatus{ENIID: "eni-0123456789abcdef0", InterfaceName: "multus0",
		State: v1alpha1.InterfaceFailed, Message: strings.Repeat("m", 1024)}
	entries := func(n int) []v1alpha1.InterfaceStatus {
		out := make([]v1alpha1.InterfaceStatus, n)
		for i := range out {
			out[i] = ok
			out[i].ENIID = fmt.Sprintf("eni-%017x", i)
		}
		return out
	}
	cases := map[string]func(*v1alpha1.InterfaceStatus){
		"message over 1 KiB":  func(s *v1alpha1.InterfaceStatus) { s.Message = strings.Repeat("m", 1025) },
		"unknown state":       func(s *v1alpha1.InterfaceStatus) { s.State = "Owned" },
		"long interface name": func(s *v1alpha1.InterfaceStatus) { s.InterfaceName = strings.Repeat("i", 16) },
		"long ENI ID":         func(s *v1alpha1.InterfaceStatus) { s.ENIID = "eni-" + strings.Repeat("0", 40) },
	}
	write := func(list []v1alpha1.InterfaceStatus) error {
		cur := &v1alpha1.ENINode{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(en), cur); err != nil {
			t.Fatal(err)
		}
		cur.Status.Interfaces = list
		return c.Status().Update(ctx, cur)
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			bad := ok
			mutate(&bad)
			if err := write([]v1alpha1.InterfaceStatus{bad}); !apierrors.IsInvalid(err) {
				t.Fatalf("status with %s: %v, want Invalid", name, err)
			}
		})
	}
	if err := write(entries(65)); !apierrors.IsInvalid(err) {
		t.Fatalf("65 reports: %v, want Invalid (at most 64, the most ENIs an instance takes)", err)
	}
	if err := write(entries(64)); err != nil {
		t.Fatalf("64 reports at the limits are refused: %v", err)
	}
}
