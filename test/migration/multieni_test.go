package migration

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/nodeeni/eniplan"
)

// docs/migration.md's procedure from aws-multi-eni-controller: its controller
// scaled to zero, eni-operator started with the original chart's
// arguments and environment (plus the cluster name and VPC it needs).
// The ENIs the original attached stay where they are — the second node's
// at device index 2, where the original's layout (base plus the subnet's
// position among all subnets) put it, not at this operator's 1 — and are
// adopted with one CreateTags each: no create, attach, detach, delete or
// modify, the attachments unchanged; the NodeENI, with the original's
// finalizer and status, becomes Ready with its status in this CRD's shape.
func TestFromAWSMultiENIController(t *testing.T) {
	env := testenv.StartForTest(t)
	ctx := context.Background()
	k8s := testenv.Client(t, env.Config)
	opsNS := "eni-controller-system"
	testenv.CreateNamespaces(t, k8s, opsNS)
	cloud := testenv.NewEC2(t, emulator.Options{}, testenv.DefaultWorld(testenv.WithNodes(2, "m5.xlarge")))
	label := map[string]string{"migration": "multi-eni"}
	var nodes, instances []string
	for i, inst := range cloud.World.Instances {
		nodes, instances = append(nodes, testenv.NodeName(i)), append(instances, inst.ID)
		testenv.CreateNode(t, k8s, testenv.Node{Name: nodes[i], Instance: inst.ID, Zone: testenv.Zone(i), Labels: label})
	}
	subnets := []string{cloud.Subnets["multus-a"], cloud.Subnets["multus-b"]}

	// 1. The state aws-multi-eni-controller leaves (scaled to zero).
	var specs []emulator.NetworkInterfaceSpec
	for i := range nodes {
		specs = append(specs, testenv.MultiENIInterface(testenv.MultiENI{NodeENI: "multus", Node: nodes[i],
			Subnet: []string{"multus-a", "multus-b"}[i], SubnetID: subnets[i], Group: cloud.Groups["multus"], Instance: instances[i], Index: 1 + i}))
	}
	enis := cloud.Load(t, emulator.World{NetworkInterfaces: specs}).NetworkInterfaces
	attachments := map[string]string{}
	var records []testenv.MultiENIAttachment
	for i, e := range enis {
		attachments[e.ID] = cloud.ENI(t, e.ID).Attachment.ID
		records = append(records, testenv.MultiENIAttachment{Node: nodes[i], Instance: instances[i], ENI: e.ID,
			AttachmentID: attachments[e.ID], Subnet: subnets[i], SubnetCIDR: "10.0.32.0/20", DeviceIndex: 1 + i})
	}
	testenv.CreateMultiENINodeENI(t, k8s, "multus", v1alpha1.NodeENISpec{NodeSelector: label, SubnetIDs: subnets,
		SecurityGroupIDs: []string{cloud.Groups["multus"]}, DeviceIndex: 1}, records)
	cloud.Emulator.ResetCounts()

	// 2. Install eni-operator with the original chart's settings.
	startOperatorLikeMultiENIChart(t, env, cloud, opsNS)
	var got v1alpha1.NodeENI
	eventually(t, "the NodeENI Ready", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKey{Name: "multus"}, &got); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && got.Status.ReadyNodes == 2, fmt.Sprintf("%+v", got.Status)
	})
	time.Sleep(2 * time.Second)

	// 3. Adopted in place: one CreateTags per ENI and nothing else that
	// changes anything (the start-up permission check's DryRun calls
	// change nothing).
	calls := map[string]int{}
	for _, c := range cloud.Emulator.Calls() {
		if !slices.Contains(c.Params["DryRun"], "true") {
			calls[c.Action]++
		}
	}
	for action, n := range calls {
		want := 0
		switch {
		case action == "CreateTags":
			want = len(enis)
		case strings.HasPrefix(action, "Describe"):
			continue
		}
		if n != want {
			t.Errorf("%d %s calls, want %d (all: %v)", n, action, want, calls)
		}
	}
	if calls["CreateTags"] != len(enis) {
		t.Errorf("%d CreateTags calls, want %d, one per adopted ENI", calls["CreateTags"], len(enis))
	}
	for i, e := range enis {
		now := cloud.ENI(t, e.ID)
		if now.Attachment == nil || now.Attachment.ID != attachments[e.ID] || now.Attachment.DeviceIndex != 1+i || now.Attachment.InstanceID != instances[i] {
			t.Errorf("%s: attachment %+v, want %s at index %d on %s as the original left it", e.ID, now.Attachment, attachments[e.ID], 1+i, instances[i])
		}
		if now.Tags[eniplan.TagNodeENIUID] != string(got.UID) || now.Tags[eniplan.TagDeviceIndex] != fmt.Sprint(1+i) {
			t.Errorf("%s: tags %v", e.ID, now.Tags)
		}
	}
	// The nodes' ENINodes list the ENIs; the original's status.attachments
	// stays as it wrote it until each node's agent reports there.
	entries := testenv.Attachments(t, k8s, got.Name)
	if len(entries) != 2 || len(got.Status.Attachments) != 2 {
		t.Fatalf("entries %+v, status attachments %+v", entries, got.Status.Attachments)
	}
	for _, a := range entries {
		i := slices.IndexFunc(enis, func(e emulator.LoadedENI) bool { return e.ID == a.ENIID })
		if i < 0 || a.NodeID != nodes[i] || a.AttachmentID != attachments[a.ENIID] || int(a.DeviceIndex) != 1+i ||
			a.Status != v1alpha1.AttachmentAttached || a.MACAddress == "" {
			t.Errorf("status entry %+v", a)
		}
	}
}

// startOperatorLikeMultiENIChart runs the eni-operator binary configured
// the way aws-multi-eni-controller's chart configures its controller
// (its two arguments, its environment), plus what this operator needs
// that the original had not: the cluster name and the VPC (instance
// metadata in production), and where AWS is.
func startOperatorLikeMultiENIChart(t *testing.T, env *testenv.Env, cloud *testenv.EC2, opsNS string) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "eni-operator")
	testenv.BuildCommand(t, "./cmd/eni-operator", bin)
	metricsAddr := testenv.FreeAddr(t)
	vars := []string{
		"KUBECONFIG=" + testenv.WriteKubeconfig(t, env.Config), "POD_NAMESPACE=" + opsNS,
		"COMPONENT=eni-controller", "NODE_NAME=", "LOG_LEVEL=info", "MAX_CONCURRENT_ENI_CLEANUP=3",
		"MAX_CONCURRENT_RECONCILES=5", "METRICS_PORT=8080", "IMDS_AUTO_CONFIGURE_HOP_LIMIT=false", "IMDS_HOP_LIMIT=2",
		"IMDS_AGGRESSIVE_CONFIGURATION=false",
	}
	for k, v := range testenv.AWSEnv(cloud.URL) {
		vars = append(vars, k+"="+v)
	}
	testenv.StartProcess(t, "eni-operator", bin, vars, "--metrics-addr="+metricsAddr, "--enable-leader-election=true",
		"--cluster-name=migration", "--vpc-id="+cloud.VPC, "--metrics-secure=false", "--health-probe-bind-address="+testenv.FreeAddr(t))
}
