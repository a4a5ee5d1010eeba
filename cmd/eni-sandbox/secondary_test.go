package main

import (
	"net/netip"
	"regexp"
	"strings"
	"testing"
)

// checkSecondaryNetwork checks the Multus pod's row: its address, in
// the definition's range, is a secondary private IP of the ENI EC2 shows
// attached to the pod's node at device index 1 (the NodeENI's), whose
// MAC the pod's network status names, and its readiness gate is open.
func checkSecondaryNetwork(t *testing.T, report string) {
	t.Helper()
	pod := regexp.MustCompile(`(?m)^cnf/cnf-0\s+(node-a\d)\s+cnf/data-plane\s+net1\s+([0-9a-f:]{17})\s+(10\.0\.40\.\d+)\s+(eni-\w+)\s+secondary private IP\s+True Registered$`).FindStringSubmatch(report)
	if pod == nil {
		t.Fatalf("no Multus pod row with its address a secondary private IP of its ENI and its readiness gate True:\n%s", report)
	}
	node, addr, eni := pod[1], pod[3], pod[4]
	onNode := regexp.MustCompile(`(?m)^` + node + `\s+i-\w+\s+us-east-1a\s+\S+\s+0\s+.*\n(?:\s+\d+\s+.*\n)*?\s+1\s+` + eni +
		`\s+data-us-east-1a\s+10\.0\.40\.\d+\s+NodeENI data-plane, secondary IPs ` + regexp.QuoteMeta(addr) + `\n`)
	if !onNode.MatchString(report) {
		t.Errorf("the nodes table does not show %s at index 1 of %s holding %s:\n%s", eni, node, addr, report)
	}
	if n := strings.Count(report, "NodeENI data-plane"); n != 2 {
		t.Errorf("%d data-plane ENIs in the node table, want 2 (the nodes of us-east-1a):\n%s", n, report)
	}
	checkReservedRange(t, report, addr)
}

// checkReservedRange checks that the definition hands out the NodeENI's
// reserved /27 alone, which holds the pod's address and none of the
// data-plane ENIs' own addresses.
func checkReservedRange(t *testing.T, report, podAddr string) {
	t.Helper()
	m := regexp.MustCompile(`whereabouts 10\.0\.40\.0/24 \((10\.0\.40\.\d+)-(10\.0\.40\.\d+)\)`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("no whereabouts range of the data-plane definition:\n%s", report)
	}
	first, last := netip.MustParseAddr(m[1]), netip.MustParseAddr(m[2])
	in := func(a netip.Addr) bool { return !a.Less(first) && !last.Less(a) }
	if p := netip.PrefixFrom(first, 27).Masked(); p.Addr() != first || !p.Contains(last) || last.As4()[3]-first.As4()[3] != 31 {
		t.Errorf("range %s-%s is not a /27: the reservation's", first, last)
	}
	if !in(netip.MustParseAddr(podAddr)) {
		t.Errorf("the pod's address %s is outside the range %s-%s", podAddr, first, last)
	}
	for _, e := range regexp.MustCompile(`data-us-east-1a\s+(10\.0\.40\.\d+)\s+NodeENI data-plane`).FindAllStringSubmatch(report, -1) {
		if in(netip.MustParseAddr(e[1])) {
			t.Errorf("the data-plane ENI's own address %s is in the pods' range %s-%s", e[1], first, last)
		}
	}
}
