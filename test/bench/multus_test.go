package bench

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/hack/bench-report/figure"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/kit/emulator"
	"github.com/eni-operator/eni-operator/internal/kit/testenv"
	"github.com/eni-operator/eni-operator/internal/podaddrs"
)

// The instance type of figure 10's nodes: m5.4xlarge takes 30 IPv4
// addresses per interface, the primary and 29 secondaries, room for 20
// pods a node (m5.2xlarge's 15 would leave 14).
const multusInstanceType, multusAddrsPerInterface = "m5.4xlarge", 30

// multusFirstPodAddr is pod 0's address in subnet "pods" (10.0.128.0/17):
// clear of the ENIs' primaries, which EC2 takes from the subnet's start.
var multusFirstPodAddr = netip.MustParseAddr("10.0.160.10")

// Figure 10: Multus pods' addresses registered on NodeENI interfaces
// (issue 28, item 6). A NodeENI with multus.registerPodAddresses over
// BENCH_MULTUS_NODES (50) nodes, then BENCH_MULTUS_PODS (1,000) pods
// spread evenly, each naming its node's ENI MAC and one address of the
// ENI's subnet in its network status, created at once: the time until
// EC2 holds every address, the calls it took, a restart in sync, and
// the time until every address is unassigned once the pods are deleted.
func TestFigureMultusAddresses(t *testing.T) {
	nodes, n := envInt(t, "BENCH_MULTUS_NODES", 50), envInt(t, "BENCH_MULTUS_PODS", 1000)
	perNode := (n + nodes - 1) / nodes
	if perNode > multusAddrsPerInterface-1 {
		t.Fatalf("%d pods on %d nodes: %d a node, more than the %d secondary addresses of a %s interface", n, nodes, perNode, multusAddrsPerInterface-1, multusInstanceType)
	}
	w := emulator.World{}
	for range nodes {
		w.Instances = append(w.Instances, emulator.InstanceSpec{Type: multusInstanceType, Subnet: "nodes-a"})
	}
	b := newBed(t, w)
	ctx := context.Background()
	nodeNames := make([]string, nodes)
	for i, inst := range b.loaded.Instances {
		nodeNames[i] = fmt.Sprintf("multus-%03d", i)
		testenv.CreateNode(t, b.k8s, testenv.Node{Name: nodeNames[i], Instance: inst.ID, Zone: "us-east-1a", Labels: map[string]string{"role": "multus-pods"}})
	}
	t.Cleanup(b.removeENINodes) // after removeNodeENIs
	t.Cleanup(b.removeNodeENIs) // after the operator stopped
	b.startOperator()
	ne := &v1alpha1.NodeENI{ObjectMeta: metav1.ObjectMeta{Name: "multus-pods"}, Spec: v1alpha1.NodeENISpec{
		NodeSelector: map[string]string{"role": "multus-pods"}, SubnetName: "pods", SecurityGroupNames: []string{"multus"}, DeviceIndex: 1,
		Multus: &v1alpha1.MultusSpec{RegisterPodAddresses: true}}}
	if err := b.k8s.Create(ctx, ne); err != nil {
		t.Fatal(err)
	}
	b.sampler.mark("NodeENI created")
	b.waitFor("the NodeENI Ready", 10*time.Minute, func() bool {
		var got v1alpha1.NodeENI
		return b.k8s.Get(ctx, client.ObjectKeyFromObject(ne), &got) == nil && meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ConditionReady)
	})
	enis := multusENIs(b, nodeNames)

	// The pods: pod i on node i % nodes, one address each.
	want := map[string]string{} // address -> ENI
	addrOf := make([]string, n)
	a := multusFirstPodAddr
	for i := range n {
		addrOf[i] = a.String()
		want[a.String()] = enis[nodeNames[i%nodes]].ID
		a = a.Next()
	}
	time.Sleep(2 * time.Second)
	b.emu.ResetCounts()
	b.sampler.mark("pods created")
	start := time.Now()
	testenv.InParallel(n, 32, func(i int) {
		node := nodeNames[i%nodes]
		b.createMultusPod(fmt.Sprintf("multus-%05d", i), node, enis[node].MAC, addrOf[i], podIP(i))
	})
	created := time.Since(start)
	var registeredAt time.Time
	b.waitFor("every address assigned", 20*time.Minute, func() bool {
		var ok bool
		registeredAt, ok = lastAddressCall(b.emu.Calls(), "AssignPrivateIpAddresses", want)
		return ok
	})
	registered := registeredAt.Sub(start)
	time.Sleep(5 * time.Second) // anything more the burst makes
	calls, total := b.calls()
	assigns, unassigns := calls["AssignPrivateIpAddresses"], calls["UnassignPrivateIpAddresses"]
	writesByKey, _ := b.sampler.opWrites()
	assignShape := callShape(b.emu.Calls(), "AssignPrivateIpAddresses")
	held, wrong := readBack(b, enis, want)
	recorded := recordedAddresses(b)

	// Restarted in sync: no EC2 write, every node looked at.
	b.op.Stop()
	b.emu.ResetCounts()
	b.startOperator()
	b.waitFor("restarted operator's first inventory refresh", time.Minute, func() bool { c, _ := b.calls(); return c["DescribeNetworkInterfaces"] > 0 })
	time.Sleep(20 * time.Second)
	restartWrites := ec2Writes(b.emu.Calls())
	restartCondition := registeredCondition(b, ne.Name)
	restartCalls, _ := b.calls()
	passes := 0.0
	if m, err := b.scrape(); err == nil {
		for k, v := range m {
			if strings.HasPrefix(k, "controller_runtime_reconcile_total{") && strings.Contains(k, `controller="podaddrs"`) {
				passes += v
			}
		}
	}

	// The pods deleted: every address unassigned.
	b.emu.ResetCounts()
	b.sampler.mark("pods deleted")
	delStart := time.Now()
	if err := b.k8s.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(b.ns), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	deleted := time.Since(delStart)
	var unassignedAt time.Time
	b.waitFor("every address unassigned", 20*time.Minute, func() bool {
		var ok bool
		unassignedAt, ok = lastAddressCall(b.emu.Calls(), "UnassignPrivateIpAddresses", want)
		return ok
	})
	unassigned := unassignedAt.Sub(delStart)
	time.Sleep(5 * time.Second)
	delCalls, delTotal := b.calls()
	unassignShape := callShape(b.emu.Calls(), "UnassignPrivateIpAddresses")
	leftHeld, _ := readBack(b, enis, map[string]string{})
	peak := b.sampler.peakRSS()

	assignBound := 1.2 * max(float64(assigns-assignBucketBurst)/assignBucketRefill, 10)
	b.write(Figure{Name: "10-multus-addresses",
		Parameters: map[string]any{"nodes": nodes, "pods": n, "podsPerNode": perNode, "instanceType": multusInstanceType,
			"ipv4AddressesPerInterface": multusAddrsPerInterface, "subnet": "pods (10.0.128.0/17)",
			"nodeENI": "1 NodeENI, multus.registerPodAddresses, device index 1: one ENI per node"},
		Results: map[string]any{"secondsToCreatePods": created.Seconds(), "secondsUntilEveryAddressAssigned": registered.Seconds(),
			"assignCalls": assigns, "unassignCallsDuringBurst": unassigns, "assignCallsPerPod": float64(assigns) / float64(n),
			"ec2CallsDuringBurst": total, "ec2CallsPerPod": float64(total) / float64(n), "assignCallShape": assignShape,
			"addressesHeldReadBack": held, "addressesWrongOrMissing": wrong, "addressesRecordedInENINodes": recorded,
			"kubernetesWritesByOperatorUntilRegistered": writesByKey, "restartEC2Writes": len(restartWrites),
			"restartEC2Calls": restartCalls, "restartPodaddrsPasses": passes,
			"conditionAfterRestart": restartCondition, "secondsToDeletePods": deleted.Seconds(),
			"secondsUntilEveryAddressUnassigned": unassigned.Seconds(), "unassignCalls": delCalls["UnassignPrivateIpAddresses"],
			"unassignCallShape": unassignShape, "ec2CallsAfterDeletion": delTotal, "addressesLeftAfterDeletion": leftHeld,
			"operatorPeakRSSMiB": peak, "rateLimiterWaits": b.limiterWaits()},
		Checks: []figure.Check{
			figure.AtMost("AssignPrivateIpAddresses per node", float64(assigns)/float64(nodes), 5, "",
				fmt.Sprintf("per-node batching: a few calls per node for its %d pods (the floor is one)", perNode)),
			figure.AtMost("UnassignPrivateIpAddresses per node", float64(delCalls["UnassignPrivateIpAddresses"])/float64(nodes), 5, "",
				"per-node batching, as for the assignments"),
			figure.AtMost("every address assigned", registered.Seconds(), assignBound, "s",
				"1.2 × max(what the Assign bucket (100, 5/s) allows for the calls made, 10 s to create the pods and pass each node)"),
			figure.AtMost("addresses wrong or missing, read back", float64(wrong), 0, "", "DescribeNetworkInterfaces of the NodeENI's ENIs"),
			figure.AtMost("EC2 writes after the restart", float64(len(restartWrites)), 0, "", "in sync: none"),
			figure.AtMost("addresses left after the pods' deletion", float64(leftHeld), 0, "", "read back"),
		},
		EC2Calls: calls, Notes: []string{
			fmt.Sprintf("EC2 calls after the pods' deletion: %v", delCalls),
			fmt.Sprintf("EC2 writes after the restart: %v", restartWrites),
		}})
}

// callShape sums up the successful calls of an address action: the
// addresses they named (more than the pods' means some named twice), the
// addresses per call, calls per ENI, and how many followed the previous
// call on their ENI within the operator's default batch delay (200 ms).
func callShape(calls []emulator.Call, action string) map[string]any {
	var perCall []float64
	perENI := map[string]int{}
	last := map[string]time.Time{}
	named, soon := 0, 0
	for _, c := range calls {
		if c.Action != action || c.Code != "" || len(c.Params["NetworkInterfaceId"]) == 0 {
			continue
		}
		eni := c.Params["NetworkInterfaceId"][0]
		k := 0
		for p := range c.Params {
			if strings.HasPrefix(p, "PrivateIpAddress.") {
				k++
			}
		}
		named += k
		perCall = append(perCall, float64(k))
		perENI[eni]++
		if t, ok := last[eni]; ok && c.Time.Sub(t) < 200*time.Millisecond {
			soon++
		}
		last[eni] = c.Time
	}
	if len(perCall) == 0 {
		return map[string]any{"calls": 0}
	}
	slices.Sort(perCall)
	most := 0
	for _, v := range perENI {
		most = max(most, v)
	}
	return map[string]any{"calls": len(perCall), "addressesNamed": named, "addressesPerCallMin": perCall[0],
		"addressesPerCallMedian": perCall[len(perCall)/2], "addressesPerCallMax": perCall[len(perCall)-1],
		"enis": len(perENI), "mostCallsOnOneENI": most, "callsWithin200msOfTheLastOnTheirENI": soon}
}

// EC2's bucket of AssignPrivateIpAddresses (../shared/notes/ec2-facts.md).
const assignBucketBurst, assignBucketRefill = 100, 5

// podIP is pod i's own address (its default network, on the node's
// primary ENI as the VPC CNI gives it): not an ENI the emulator knows.
func podIP(i int) string { return fmt.Sprintf("10.0.%d.%d", 8+i/250, 1+i%250) }

// multusENIs reads each node's ENI of the NodeENI from EC2 (one
// DescribeNetworkInterfaces by the operator's cluster tag) and its
// node from the ENINodes.
func multusENIs(b *bed, nodes []string) map[string]awstypes.ENI {
	ctx := context.Background()
	list, err := b.ec2().ListENIs(ctx, ec2.Filter{Name: "tag-key", Values: []string{"eni-operator.io/cluster"}})
	if err != nil {
		b.t.Fatal(err)
	}
	byID := map[string]awstypes.ENI{}
	for _, e := range list {
		byID[e.ID] = e
	}
	out := map[string]awstypes.ENI{}
	for _, node := range nodes {
		var en v1alpha1.ENINode
		if err := b.k8s.Get(ctx, client.ObjectKey{Name: node}, &en); err != nil {
			b.t.Fatal(err)
		}
		for _, a := range en.Spec.Attachments {
			if e, ok := byID[a.ENIID]; ok && a.NodeENI == "multus-pods" && e.Attachment != nil {
				out[node] = e
			}
		}
		if _, ok := out[node]; !ok {
			b.t.Fatalf("node %s: no attached ENI of the NodeENI in EC2 (ENINode %+v)", node, en.Spec.Attachments)
		}
	}
	return out
}

// createMultusPod creates a running pod on node whose network status, as
// Multus writes it, names the ENI's MAC with addr.
func (b *bed) createMultusPod(name, node, mac, addr, ip string) {
	status := fmt.Sprintf(`[{"name":"aws-cni","interface":"eth0","ips":[%q],"mac":"0a:00:00:00:00:01","default":true},`+
		`{"name":"%s/multus-pods","interface":"net1","ips":[%q],"mac":%q}]`, ip, b.ns, addr, mac)
	p := b.newPod(name, map[string]string{podaddrs.NetworkStatusAnnotation: status})
	p.Spec.NodeName = node
	testenv.CreatePod(b.t, b.k8s, p, testenv.Running(ip))
}

// lastAddressCall says when the last of the wanted addresses (address
// -> ENI) was named on its ENI by a successful call of action, and
// whether all were.
func lastAddressCall(calls []emulator.Call, action string, want map[string]string) (time.Time, bool) {
	left := len(want)
	seen := map[string]bool{}
	var last time.Time
	for _, c := range calls {
		if c.Action != action || c.Code != "" || len(c.Params["NetworkInterfaceId"]) == 0 {
			continue
		}
		eni := c.Params["NetworkInterfaceId"][0]
		for k, v := range c.Params {
			if strings.HasPrefix(k, "PrivateIpAddress.") && want[v[0]] == eni && !seen[v[0]] {
				seen[v[0]] = true
				left--
				last = c.Time
			}
		}
	}
	return last, left == 0
}

// readBack reads the NodeENI's ENIs from EC2 and counts the secondary
// addresses they hold, and the wanted addresses (address -> ENI) not
// on their ENI plus the addresses held that are not wanted.
func readBack(b *bed, enis map[string]awstypes.ENI, want map[string]string) (held, wrong int) {
	var ids []string
	for _, e := range enis {
		ids = append(ids, e.ID)
	}
	slices.Sort(ids)
	list, err := b.ec2().ListENIs(context.Background(), ec2.Filter{Name: "network-interface-id", Values: ids})
	if err != nil {
		b.t.Fatal(err)
	}
	on := map[string]string{}
	for _, e := range list {
		for _, ip := range e.SecondaryIPs {
			on[ip] = e.ID
			held++
			if want[ip] != e.ID {
				wrong++
			}
		}
	}
	for ip := range want {
		if _, ok := on[ip]; !ok {
			wrong++
		}
	}
	return held, wrong
}

// registeredCondition is the NodeENI's PodAddressesRegistered condition
// as "Status Reason: Message".
func registeredCondition(b *bed, name string) string {
	var ne v1alpha1.NodeENI
	if err := b.k8s.Get(context.Background(), client.ObjectKey{Name: name}, &ne); err != nil {
		return err.Error()
	}
	c := meta.FindStatusCondition(ne.Status.Conditions, v1alpha1.ConditionPodAddressesRegistered)
	if c == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
}

// recordedAddresses counts the addresses of the ENINodes' records.
func recordedAddresses(b *bed) int {
	var list v1alpha1.ENINodeList
	if err := b.k8s.List(context.Background(), &list); err != nil {
		b.t.Fatal(err)
	}
	n := 0
	for _, en := range list.Items {
		n += len(en.Spec.PodAddresses)
	}
	return n
}

// ec2Writes lists the calls that change EC2 (not a read, not a dry run).
func ec2Writes(calls []emulator.Call) []string {
	var out []string
	for _, c := range calls {
		if strings.HasPrefix(c.Action, "Describe") || strings.HasPrefix(c.Action, "Get") || c.Params["DryRun"] != nil {
			continue
		}
		out = append(out, fmt.Sprint(c.Action, " ", c.Params))
	}
	return out
}

// removeENINodes deletes the figure's ENINodes (their finalizers
// dropped), so the next figure's operator does not find their records.
func (b *bed) removeENINodes() {
	ctx := context.Background()
	var list v1alpha1.ENINodeList
	if err := b.k8s.List(ctx, &list); err != nil {
		b.t.Error(err)
		return
	}
	for i := range list.Items {
		b.forceDelete(ctx, &list.Items[i])
	}
}
