package eniplan

import (
	"slices"

	v1alpha1 "github.com/eni-operator/eni-operator/api/v1alpha1"
)

// Acted is what carrying a plan out left: the plan of the state after it
// (for status), the entries of the deprecated status.attachments still
// needed, the nodes EC2 refused, the first other error, and in dry-run
// what would have been done.
type Acted struct {
	After    Plan
	Legacy   []v1alpha1.ENIAttachment
	Failures []Blocked
	ExecErr  error
	Dry      string
}

// RoundsOf splits actions into rounds of at most n nodes each, nodes in
// plan order; a node's actions stay together, in their order (execute
// skips a node's later steps when one fails).
func RoundsOf(acts []Action, n int) [][]Action {
	order, byNode := PerNode(acts)
	var rounds [][]Action
	for chunk := range slices.Chunk(order, max(n, 1)) {
		var round []Action
		for _, node := range chunk {
			round = append(round, byNode[node]...)
		}
		rounds = append(rounds, round)
	}
	return rounds
}

// PerNode groups actions by node: the nodes in the order of their first
// action, and each node's actions in their order.
func PerNode(acts []Action) ([]string, map[string][]Action) {
	byNode := map[string][]Action{}
	var order []string
	for _, a := range acts {
		if _, ok := byNode[a.Node]; !ok {
			order = append(order, a.Node)
		}
		byNode[a.Node] = append(byNode[a.Node], a)
	}
	return order, byNode
}
