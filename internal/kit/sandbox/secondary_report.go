package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/eni-operator/eni-operator/internal/attachdefs"
	"github.com/eni-operator/eni-operator/internal/awstypes"
	"github.com/eni-operator/eni-operator/internal/podaddrs"
)

// defRow is a NetworkAttachmentDefinition the operator wrote.
type defRow struct {
	namespace, name, nodeENI, typ, master, ipam string
}

// multusRow is an address of a pod on a secondary network, with the ENI
// EC2 shows holding it.
type multusRow struct {
	pod, node, network, iface, mac, addr string
	// eni holds addr in EC2 ("" none); assigned says how: the ENI's
	// secondary private IP, its primary one, or not assigned.
	eni, assigned string
	// gate is the pod's readiness gate condition ("-": no gate).
	gate string
}

// definitionRows lists the definitions the operator wrote (those with
// its NodeENI label), none when their CRD is not installed.
func definitionRows(ctx context.Context, k8s client.Client) ([]defRow, error) {
	list := &unstructured.UnstructuredList{}
	gvk := attachdefs.GroupVersionKind()
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := k8s.List(ctx, list, client.HasLabels{attachdefs.LabelNodeENI}); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing NetworkAttachmentDefinitions: %w", err)
	}
	var rows []defRow
	for i := range list.Items {
		u := &list.Items[i]
		row := defRow{namespace: u.GetNamespace(), name: u.GetName(), nodeENI: u.GetLabels()[attachdefs.LabelNodeENI], typ: "-", master: "-", ipam: "-"}
		if c, err := parseDefConfig(u); err == nil {
			row.typ = c.Type
			if c.Mode != "" {
				row.typ += " " + c.Mode
			}
			row.master = orDash(c.Master + c.Device)
			row.ipam = c.IPAM.Type
			if c.IPAM.Range != "" {
				row.ipam = fmt.Sprintf("%s %s (%s-%s)", c.IPAM.Type, c.IPAM.Range, c.IPAM.RangeStart, c.IPAM.RangeEnd)
			}
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b defRow) int { return cmpStrings(a.namespace+"/"+a.name, b.namespace+"/"+b.name) })
	return rows, nil
}

// multusRows lists, for every pod whose network status names a secondary
// network, each address it has there and the ENI holding it in EC2.
func multusRows(ctx context.Context, k8s client.Client, enis []awstypes.ENI) ([]multusRow, error) {
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods); err != nil {
		return nil, err
	}
	var rows []multusRow
	for _, p := range pods.Items {
		v, ok := p.Annotations[podaddrs.NetworkStatusAnnotation]
		if !ok {
			continue
		}
		var nets []networkStatus
		if err := json.Unmarshal([]byte(v), &nets); err != nil {
			continue
		}
		for _, n := range nets {
			if n.Default || n.MAC == "" {
				continue
			}
			for _, ip := range n.IPs {
				row := multusRow{pod: p.Namespace + "/" + p.Name, node: p.Spec.NodeName, network: n.Name, iface: n.Interface,
					mac: n.MAC, addr: ip, assigned: "not assigned", gate: gateOf(&p)}
				for _, e := range enis {
					switch {
					case e.PrimaryIP == ip:
						row.eni, row.assigned = e.ID, "primary private IP"
					case slices.Contains(e.SecondaryIPs, ip) || slices.Contains(e.IPv6Addresses, ip):
						row.eni, row.assigned = e.ID, "secondary private IP"
					default:
						continue
					}
					if !strings.EqualFold(e.MAC, n.MAC) {
						row.assigned += " (the ENI's MAC is " + e.MAC + ")"
					}
				}
				rows = append(rows, row)
			}
		}
	}
	slices.SortFunc(rows, func(a, b multusRow) int { return cmpStrings(a.pod+" "+a.addr, b.pod+" "+b.addr) })
	return rows, nil
}

// printSecondary writes the definitions and the Multus pods' addresses.
func (r *report) printSecondary(out io.Writer) {
	if len(r.defs) == 0 && len(r.multus) == 0 {
		return
	}
	fmt.Fprintln(out, "\nNETWORKATTACHMENTDEFINITIONS — written by the operator for NodeENIs with multus.attachmentDefinition")
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tNAME\tNODEENI\tTYPE\tMASTER\tIPAM")
	for _, d := range r.defs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", d.namespace, d.name, d.nodeENI, d.typ, d.master, d.ipam)
	}
	_ = w.Flush()

	fmt.Fprintln(out, "\nMULTUS PODS — addresses on secondary networks (network status as Multus writes it; the ENI read back from EC2)")
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "POD\tNODE\tNETWORK\tINTERFACE\tMAC\tADDRESS\tENI\tON THE ENI\tREADINESS GATE")
	for _, m := range r.multus {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.pod, m.node, m.network, m.iface, m.mac, m.addr, orDash(m.eni), m.assigned, m.gate)
	}
	_ = w.Flush()
}

// gateOf says a pod's readiness gate condition (podaddrs.GateCondition):
// "-" when the pod does not name the gate.
func gateOf(p *corev1.Pod) string {
	if !slices.ContainsFunc(p.Spec.ReadinessGates, func(g corev1.PodReadinessGate) bool { return g.ConditionType == podaddrs.GateCondition }) {
		return "-"
	}
	for _, c := range p.Status.Conditions {
		if c.Type == podaddrs.GateCondition {
			return fmt.Sprintf("%s %s", c.Status, c.Reason)
		}
	}
	return "not written"
}
