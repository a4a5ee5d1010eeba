// Package measure holds the bench's pure measurements (test/bench):
// reading the kube-apiserver's request counter, the throttling family of
// a call in the EC2 emulator's log, keeping sampled series aligned. A
// package of its own so its table tests run in every `go test`, not only
// under ENI_BENCH.
package measure

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// AppendAll appends each key's value of now to its series, a key first
// seen now starting with zeros so all series stay as long as x (n).
func AppendAll(series map[string][]float64, now map[string]float64, n int) {
	for k, v := range now {
		if _, ok := series[k]; !ok {
			series[k] = make([]float64, n-1)
		}
		series[k] = append(series[k], v)
	}
	for k, v := range series {
		if len(v) < n {
			series[k] = append(v, v[len(v)-1])
		}
	}
}

// WriteGroup is the chart line a write counts on: the resources the
// operator writes by name, the rest together.
func WriteGroup(key string) string {
	_, res, _ := strings.Cut(key, " ")
	switch res {
	case "pods", "pods/status", "configmaps", "events", "leases", "nodeenis/status":
		return res
	}
	return "other"
}

// EC2Family is AWS's throttling family of a recorded call, as
// internal/ec2's families.go has them (the bench reads the emulator's
// log, not the client's input types).
func EC2Family(action string, params map[string][]string) string {
	switch action {
	case "CreateTags", "DeleteTags":
		return "tags"
	case "CreateNetworkInterface", "DeleteNetworkInterface", "ModifyNetworkInterfaceAttribute",
		"AssignPrivateIpAddresses", "UnassignPrivateIpAddresses":
		return "eni-mutation"
	}
	if !strings.HasPrefix(action, "Describe") {
		return "other-mutation"
	}
	for k := range params {
		if strings.HasPrefix(k, "Filter.") || strings.Contains(k, "Id.") || k == "MaxResults" || k == "NextToken" || k == "GroupName.1" {
			return "describe"
		}
	}
	if action == "DescribeNetworkInterfaces" || action == "DescribeInstances" || action == "DescribeSecurityGroups" {
		return "unfiltered-describe"
	}
	return "describe"
}

// RequestTotals sums apiserver_request_total's write series by
// verb and resource.
func RequestTotals(r io.Reader) (map[string]float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	out := map[string]float64{}
	const name = "apiserver_request_total{"
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		labels := promLabels(line[len(name):end])
		switch labels["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY":
		default:
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			return nil, fmt.Errorf("apiserver_request_total: %q: %w", line, err)
		}
		out[writeKey(labels["verb"], labels["resource"], labels["subresource"])] += v
	}
	return out, sc.Err()
}

func writeKey(verb, resource, sub string) string {
	if sub != "" {
		resource += "/" + sub
	}
	return verb + " " + resource
}

// promLabels parses a=“x”,b=“y” (values without commas or quotes, as
// apiserver_request_total's are).
func promLabels(s string) map[string]string {
	out := map[string]string{}
	for kv := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

// LimiterWaits reads the operator's client-side rate-limit waits from a
// scrape (series name{labels} -> value) and says, per throttling family,
// how many requests waited how long on average: "describe: 12 requests,
// mean 0.25 s; tags: ...". It shows whether one family's load made
// another's requests wait (issue 16: tag writes never wait for
// describes).
func LimiterWaits(scrape map[string]float64) string {
	const name = "eni_operator_ec2_rate_limiter_wait_seconds"
	count, sum := map[string]float64{}, map[string]float64{}
	for k, v := range scrape {
		var into map[string]float64
		switch {
		case strings.HasPrefix(k, name+"_count{"):
			into = count
		case strings.HasPrefix(k, name+"_sum{"):
			into = sum
		default:
			continue
		}
		labels := promLabels(k[strings.IndexByte(k, '{')+1 : strings.LastIndexByte(k, '}')])
		into[labels["family"]] += v
	}
	families := make([]string, 0, len(count))
	for f := range count {
		families = append(families, f)
	}
	slices.Sort(families)
	parts := make([]string, 0, len(families))
	for _, f := range families {
		if count[f] == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %.0f requests, mean %.3f s", f, count[f], sum[f]/count[f]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
