// Package tagkeys is the product's one list of reserved EC2 tag keys: the
// keys no pod annotation, NodeENI spec or other user input may set or
// remove, because the operator itself, AWS, or another AWS/Kubernetes
// component decides what to detach, delete, ignore or trust by them.
//
// The pod tagger refuses them in annotations, the NodeENI controller never
// writes them from spec.tags (the CRD's CEL rule repeats the list; a test
// keeps it in step), and the IAM policy documents deny them to the tagger
// (a test keeps those in step too). See docs/security.md.
package tagkeys

import "strings"

// The operator's own prefixes: the NodeENI controller's ownership tags and
// the pod tagger's bookkeeping. An ENI carrying one belongs to that part,
// and the other part leaves it alone.
const (
	NodeENIPrefix = "eni-operator.io/"
	TaggerPrefix  = "eni-tagger.io/"
)

// HasKeyWithPrefix reports whether any of tags' keys starts with prefix,
// in any letter case, and returns the first such key found.
func HasKeyWithPrefix(tags map[string]string, prefix string) (string, bool) {
	for k := range tags {
		if strings.HasPrefix(strings.ToLower(k), prefix) {
			return k, true
		}
	}
	return "", false
}

// Reservation is one reserved key prefix and why it is reserved.
type Reservation struct {
	// Prefix is matched against a key's start in any letter case.
	Prefix string
	// Owner is who acts on keys with this prefix.
	Owner string
	// Why says what that owner does with them, i.e. what a forged key
	// would make it do.
	Why string
}

// Reserved returns the reserved prefixes, most consequential first. It
// returns a new slice each time, so no caller can change the list.
func Reserved() []Reservation {
	return []Reservation{
		{NodeENIPrefix, "eni-operator (NodeENI controller, collector)",
			"ownership of NodeENI ENIs (cluster, NodeENI UID, node, instance): the controller and the collector detach and delete ENIs by them"},
		{TaggerPrefix, "eni-operator (pod tagger), k8s-eni-tagger",
			"the tagger's ownership token (eni-tagger.io/hash): conflict detection and which tags it removes"},
		{"aws:", "AWS", "reserved by AWS; EC2 refuses them"},
		{"kubernetes.io/", "Kubernetes cloud provider, AWS Load Balancer Controller, VPC resource controller, aws-multi-eni-controller",
			"kubernetes.io/cluster/<name> marks resources a cluster owns (and may delete); kubernetes.io/role/* drives subnet discovery"},
		{"k8s.io/", "cluster-autoscaler and other Kubernetes components", "k8s.io/cluster-autoscaler/* discovery and ownership tags"},
		{"node.k8s.amazonaws.com/", "Amazon VPC CNI",
			"no_manage makes the CNI ignore an ENI; instance_id/createdAt mark CNI ENIs that its leaked-ENI cleanup deletes"},
		{"cluster.k8s.amazonaws.com/", "Amazon VPC CNI", "cluster.k8s.amazonaws.com/name scopes the CNI's leaked-ENI cleanup to a cluster"},
		{"cni.networking.k8s.aws/", "Amazon VPC CNI", "cni.networking.k8s.aws/cluster/<name> selects the subnets the CNI places pod ENIs in"},
		{"vpcresources.k8s.aws/", "Amazon VPC resource controller", "trunk and branch ENI bookkeeping (trunk-eni-id, vlan-id) that its garbage collection acts on"},
		{"eks:", "Amazon EKS", "eks:eni:owner (e.g. amazon-vpc-cni, eks-vpc-resource-controller) and eks:cluster-name mark ENIs and resources EKS components own and delete"},
		{"eks-cluster-name", "Amazon EKS tooling", "scopes resources to an EKS cluster"},
		{"karpenter.sh/", "Karpenter", "nodepool and nodeclaim ownership of the resources it launches and garbage-collects"},
		{"karpenter.k8s.aws/", "Karpenter (AWS provider)", "EC2NodeClass ownership of the resources it launches and garbage-collects"},
		{"elbv2.k8s.aws/", "AWS Load Balancer Controller", "elbv2.k8s.aws/cluster marks security groups and load balancers it owns and deletes"},
		{"service.k8s.aws/", "AWS Load Balancer Controller", "stack and resource tags of Service load balancers it reconciles"},
		{"ingress.k8s.aws/", "AWS Load Balancer Controller", "stack and resource tags of Ingress load balancers it reconciles"},
	}
}

// Prefixes returns just the reserved prefixes, in Reserved's order.
func Prefixes() []string {
	r := Reserved()
	out := make([]string, len(r))
	for i, res := range r {
		out[i] = res.Prefix
	}
	return out
}

// ReservedBy returns the reservation a key falls under, if any. Matching
// ignores letter case: EC2 keys are case-sensitive, but a near-miss such
// as "ENI-Operator.io/cluster" is refused too so nothing can be made to
// look like an ownership tag to a person or a case-folding tool.
func ReservedBy(key string) (Reservation, bool) {
	lower := strings.ToLower(key)
	for _, r := range Reserved() {
		if strings.HasPrefix(lower, r.Prefix) {
			return r, true
		}
	}
	return Reservation{}, false
}

// IsReserved reports whether a key is reserved.
func IsReserved(key string) bool {
	_, ok := ReservedBy(key)
	return ok
}
