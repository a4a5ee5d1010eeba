package sandbox

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/api/v1alpha1"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/ec2"
	"github.com/eni-operator/eni-operator/internal/tagger"
)

// report is what the sandbox shows: each demo pod with its ENI and the
// tags on it (as EC2 reports them), each node with its attached ENIs, and
// each NodeENI's readiness, each tag policy's figures, and the secondary
// network: the attachment definitions the operator wrote and the Multus
// pods' addresses with the ENI EC2 shows holding each.
type report struct {
	pods     []podRow
	nodes    []nodeRow
	nodeENIs []nodeENIRow
	policies []v1alpha1.ENITagPolicy
	defs     []defRow
	multus   []multusRow
}

type podRow struct {
	name, node, ip, eni, condition, message string
	tags                                    map[string]string
}

type nodeRow struct {
	name, instance, zone, typ string
	enis                      []eniRow
}

type eniRow struct {
	deviceIndex          int
	id, subnet, ip, role string
}

type nodeENIRow struct {
	name, status   string
	ready, desired int32
	// podAddresses and definitions are the PodAddressesRegistered and
	// AttachmentDefinitionsReady conditions ("-" without), notes their
	// messages.
	podAddresses, definitions string
	notes                     []string
}

// collect reads the report from the API server and from EC2.
func collect(ctx context.Context, k8s client.Client, ec2c *ec2.Client) (*report, error) {
	enis, err := ec2c.ListENIs(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing ENIs: %w", err)
	}
	subnets, err := ec2c.Subnets(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing subnets: %w", err)
	}
	subnetName := map[string]string{}
	for _, s := range subnets {
		subnetName[s.ID] = s.Tags["Name"]
	}
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(demoNamespace)); err != nil {
		return nil, err
	}
	var nodes corev1.NodeList
	if err := k8s.List(ctx, &nodes); err != nil {
		return nil, err
	}
	var nes v1alpha1.NodeENIList
	if err := k8s.List(ctx, &nes); err != nil {
		return nil, err
	}
	var policies v1alpha1.ENITagPolicyList
	if err := k8s.List(ctx, &policies); err != nil {
		return nil, err
	}
	r := buildReport(pods.Items, nodes.Items, nes.Items, enis, subnetName)
	r.policies = policies.Items
	if r.defs, err = definitionRows(ctx, k8s); err != nil {
		return nil, err
	}
	if r.multus, err = multusRows(ctx, k8s, enis); err != nil {
		return nil, err
	}
	return r, nil
}

// buildReport joins what the API server and EC2 say.
func buildReport(pods []corev1.Pod, nodes []corev1.Node, nes []v1alpha1.NodeENI, enis []awstypes.ENI, subnetName map[string]string) *report {
	r := &report{}
	r.pods = podRows(pods, enis)
	slices.SortFunc(r.pods, func(a, b podRow) int { return cmpStrings(a.name, b.name) })

	for _, n := range nodes {
		row := nodeRow{name: n.Name, zone: n.Labels[corev1.LabelTopologyZone], typ: n.Labels[corev1.LabelInstanceTypeStable]}
		if i := strings.LastIndex(n.Spec.ProviderID, "/"); i >= 0 {
			row.instance = n.Spec.ProviderID[i+1:]
		}
		for _, e := range enis {
			if e.Attachment == nil || e.Attachment.InstanceID != row.instance {
				continue
			}
			role := e.InterfaceType
			switch {
			case e.Attachment.DeviceIndex == 0:
				role = "primary"
			case e.Tags["eni-operator.io/nodeeni"] != "":
				role = "NodeENI " + e.Tags["eni-operator.io/nodeeni"]
				if len(e.SecondaryIPs) > 0 {
					role += ", secondary IPs " + strings.Join(e.SecondaryIPs, " ")
				}
			}
			subnet := subnetName[e.SubnetID]
			if subnet == "" {
				subnet = e.SubnetID
			}
			row.enis = append(row.enis, eniRow{deviceIndex: e.Attachment.DeviceIndex, id: e.ID, subnet: subnet, ip: e.PrimaryIP, role: role})
		}
		slices.SortFunc(row.enis, func(a, b eniRow) int { return a.deviceIndex - b.deviceIndex })
		r.nodes = append(r.nodes, row)
	}
	slices.SortFunc(r.nodes, func(a, b nodeRow) int { return cmpStrings(a.name, b.name) })

	for _, ne := range nes {
		row := nodeENIRow{name: ne.Name, ready: ne.Status.ReadyNodes, desired: ne.Status.DesiredNodes, status: "-", podAddresses: "-", definitions: "-"}
		if c := meta.FindStatusCondition(ne.Status.Conditions, "Ready"); c != nil {
			row.status = fmt.Sprintf("%s %s", c.Status, c.Reason)
		}
		for _, t := range []struct {
			cond string
			to   *string
		}{{v1alpha1.ConditionPodAddressesRegistered, &row.podAddresses}, {v1alpha1.ConditionAttachmentDefinitionsReady, &row.definitions}} {
			if c := meta.FindStatusCondition(ne.Status.Conditions, t.cond); c != nil {
				*t.to = fmt.Sprintf("%s %s", c.Status, c.Reason)
				row.notes = append(row.notes, fmt.Sprintf("  %s: %s: %s", ne.Name, t.cond, c.Message))
			}
		}
		r.nodeENIs = append(r.nodeENIs, row)
	}
	return r
}

// podRows joins each pod with the ENI that holds its IP.
func podRows(pods []corev1.Pod, enis []awstypes.ENI) []podRow {
	var rows []podRow
	byIP := map[string]awstypes.ENI{}
	for _, e := range enis {
		byIP[e.PrimaryIP] = e
		for _, ip := range e.SecondaryIPs {
			byIP[ip] = e
		}
	}
	for _, p := range pods {
		row := podRow{name: p.Name, node: p.Spec.NodeName, ip: p.Status.PodIP, condition: "-"}
		for _, c := range p.Status.Conditions {
			if string(c.Type) == tagger.ConditionType {
				row.condition = fmt.Sprintf("%s %s", c.Status, c.Reason)
				if c.Status != corev1.ConditionTrue {
					row.message = c.Message
				} else if _, fromPolicies, ok := strings.Cut(c.Message, "; "); ok {
					// Which policy gave which key.
					row.message = fromPolicies
				}
			}
		}
		if e, ok := byIP[p.Status.PodIP]; ok {
			row.eni = e.ID
			row.tags = map[string]string{}
			for k, v := range e.Tags {
				if k != tagger.HashTag {
					row.tags[k] = v
				}
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// print writes the report as aligned tables.
func (r *report) print(out io.Writer) {
	fmt.Fprintf(out, "\nPODS (namespace %s) — the tags are read back from EC2\n", demoNamespace)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "POD\tNODE\tPOD IP\tENI\tCONDITION\tTAGS ON THE ENI")
	var notes []string
	for _, p := range r.pods {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", p.name, p.node, p.ip, orDash(p.eni), p.condition, formatTags(p.tags))
		if p.message != "" {
			notes = append(notes, fmt.Sprintf("  %s: %s", p.name, p.message))
		}
	}
	_ = w.Flush()
	for _, n := range notes {
		fmt.Fprintln(out, n)
	}
	fmt.Fprintf(out, "(each tagged ENI also carries %s, the operator's ownership token)\n", tagger.HashTag)

	fmt.Fprintln(out, "\nNODES — ENIs attached to each node's instance")
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tINSTANCE\tZONE\tTYPE\tINDEX\tENI\tSUBNET\tIP\tWHAT")
	for _, n := range r.nodes {
		if len(n.enis) == 0 {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t-\t-\t-\t-\t-\n", n.name, n.instance, n.zone, n.typ)
		}
		for i, e := range n.enis {
			name, inst, zone, typ := n.name, n.instance, n.zone, n.typ
			if i > 0 {
				name, inst, zone, typ = "", "", "", ""
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", name, inst, zone, typ, e.deviceIndex, e.id, e.subnet, e.ip, e.role)
		}
	}
	_ = w.Flush()

	fmt.Fprintln(out, "\nENITAGPOLICIES — tags a platform team sets on the ENIs of the pods they select")
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tMATCHED\tTAGGED\tREFUSED\tREADY CONDITION")
	for _, p := range r.policies {
		status := "-"
		if c := meta.FindStatusCondition(p.Status.Conditions, "Ready"); c != nil {
			status = fmt.Sprintf("%s %s", c.Status, c.Reason)
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\n", p.Name, p.Status.MatchedPods, p.Status.TaggedPods, p.Status.RefusedPods, status)
	}
	_ = w.Flush()

	fmt.Fprintln(out, "\nNODEENIS")
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tREADY NODES\tDESIRED\tREADY CONDITION\tPOD ADDRESSES\tATTACHMENT DEFINITIONS")
	for _, ne := range r.nodeENIs {
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%s\n", ne.name, ne.ready, ne.desired, ne.status, ne.podAddresses, ne.definitions)
	}
	_ = w.Flush()
	for _, ne := range r.nodeENIs {
		for _, n := range ne.notes {
			fmt.Fprintln(out, n)
		}
	}
	r.printSecondary(out)
}

func formatTags(tags map[string]string) string {
	if len(tags) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		parts = append(parts, k+"="+tags[k])
	}
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// accessInfo is how a person reaches the running sandbox.
type accessInfo struct {
	kubeconfig, kubectl, endpoint, metrics, probe, log, apiserver string
	// identity is who the operator is to the API server, and what limits it.
	identity string
	// flags are the operator flags the sandbox sets.
	flags []flagChange
}

func printAccess(out io.Writer, a accessInfo) {
	fmt.Fprintf(out, `
THE SANDBOX IS UP
  kube-apiserver   %s
  kubeconfig       %s  (administrator credentials; removed when the sandbox stops)
  kubectl          %s
  EC2 emulator     %s  (admin API: %s/_emulator/counts, /_emulator/calls)
  operator         metrics http://%s/metrics (plain HTTP here; HTTPS with authentication in a cluster), health http://%s/healthz and /readyz, log %s
  operator runs as %s

The operator runs with eni-operator's production defaults (intervals, rate limits), except these flags:
`, a.apiserver, a.kubeconfig, a.kubectl, a.endpoint, a.endpoint, a.metrics, a.probe, a.log, a.identity)
	for _, f := range a.flags {
		fmt.Fprintf(out, "  %s\n", f)
	}
	fmt.Fprintf(out, `  So, as in production: a pod's tags are written at most once per 10 s (--pod-rate-limit-qps=0.1; a change
  within that waits for it), NodeENIs are re-checked every minute and the VPC's subnets re-read every 5 minutes.

There is no kubelet: pods never stop by themselves, and a plain "kubectl delete pod" waits forever for one.
Delete a pod with: kubectl delete pod -n %s NAME --grace-period=0 --force

Try, in another terminal:
  export KUBECONFIG=%s PATH=%s:$PATH
  kubectl get pods -n %s -o wide; kubectl get neni; kubectl get eninodes
  kubectl get network-attachment-definitions -A -o yaml; kubectl get pod -n %s %s -o yaml
  kubectl annotate pod -n %s web-0 --overwrite %s='Team=Payments,Env=dev'
  export AWS_ENDPOINT_URL_EC2=%s AWS_REGION=%s AWS_DEFAULT_REGION=%s AWS_ACCESS_KEY_ID=sandbox AWS_SECRET_ACCESS_KEY=sandbox
  aws ec2 describe-network-interfaces --query 'NetworkInterfaces[].[NetworkInterfaceId,TagSet]'

`, demoNamespace, a.kubeconfig, dirOf(a.kubectl), demoNamespace, secondaryNamespace, secondaryPodName, demoNamespace, tagger.DefaultAnnotationKey, a.endpoint, region, region)
}

func dirOf(path string) string {
	if i := strings.LastIndex(path, "/"); i > 0 {
		return path[:i]
	}
	return "."
}
