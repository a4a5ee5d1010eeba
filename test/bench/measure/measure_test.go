package measure

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestRequestTotals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    map[string]float64
		wantErr bool
	}{
		{"nothing", "", map[string]float64{}, false},
		{"reads are not writes; other metrics ignored", `# HELP apiserver_request_total x
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 12
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="WATCH",version="v1"} 3
apiserver_request_duration_seconds_count{verb="PATCH",resource="pods"} 9
`, map[string]float64{}, false},
		{"writes summed over codes, subresources apart", `apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 10
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="PATCH",version="v1"} 3e+00
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="DELETECOLLECTION",version="v1"} 1
`, map[string]float64{"PATCH pods/status": 12, "POST pods": 5, "PATCH configmaps": 3, "DELETECOLLECTION pods": 1}, false},
		{"a value that is no number", `apiserver_request_total{verb="POST",resource="pods"} many` + "\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RequestTotals(strings.NewReader(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			if !tc.wantErr && !maps.Equal(got, tc.want) {
				t.Errorf("RequestTotals = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEC2Family(t *testing.T) {
	for _, tc := range []struct {
		action string
		params map[string][]string
		want   string
	}{
		{"CreateTags", nil, "tags"},
		{"DeleteTags", nil, "tags"},
		{"CreateNetworkInterface", nil, "eni-mutation"},
		{"ModifyNetworkInterfaceAttribute", nil, "eni-mutation"},
		{"AttachNetworkInterface", nil, "other-mutation"},
		{"DetachNetworkInterface", nil, "other-mutation"},
		{"DescribeNetworkInterfaces", map[string][]string{"Filter.1.Name": {"vpc-id"}, "Filter.1.Value.1": {"vpc-1"}}, "describe"},
		{"DescribeNetworkInterfaces", map[string][]string{"NetworkInterfaceId.1": {"eni-1"}}, "describe"},
		{"DescribeNetworkInterfaces", map[string][]string{"MaxResults": {"1000"}}, "describe"},
		{"DescribeNetworkInterfaces", nil, "unfiltered-describe"},
		{"DescribeInstances", map[string][]string{"DryRun": {"true"}}, "unfiltered-describe"},
		{"DescribeSubnets", nil, "describe"},
	} {
		if got := EC2Family(tc.action, tc.params); got != tc.want {
			t.Errorf("EC2Family(%s, %v) = %s, want %s", tc.action, tc.params, got, tc.want)
		}
	}
}

func TestWriteGroup(t *testing.T) {
	for key, want := range map[string]string{
		"PATCH pods/status": "pods/status", "PATCH pods": "pods", "PATCH configmaps": "configmaps",
		"POST events": "events", "PUT leases": "leases", "PUT nodeenis/status": "nodeenis/status",
		"POST namespaces": "other", "garbage": "other",
	} {
		if got := WriteGroup(key); got != want {
			t.Errorf("WriteGroup(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestAppendAll(t *testing.T) {
	series := map[string][]float64{}
	AppendAll(series, map[string]float64{"a": 1}, 1)
	AppendAll(series, map[string]float64{"a": 2, "b": 5}, 2) // b is new: zero before
	AppendAll(series, map[string]float64{"b": 6}, 3)         // a not seen: holds its value
	want := map[string][]float64{"a": {1, 2, 2}, "b": {0, 5, 6}}
	for k, w := range want {
		if !slices.Equal(series[k], w) {
			t.Errorf("series[%s] = %v, want %v", k, series[k], w)
		}
	}
	if len(series) != len(want) {
		t.Errorf("series %v, want only %v", series, want)
	}
}

func TestLimiterWaits(t *testing.T) {
	const n = "eni_operator_ec2_rate_limiter_wait_seconds"
	for _, tc := range []struct {
		name   string
		scrape map[string]float64
		want   string
	}{
		{"no scrape", nil, "none"},
		{"no request yet", map[string]float64{n + `_count{family="tags",operation="CreateTags"}`: 0}, "none"},
		{"by family, operations summed, buckets ignored", map[string]float64{
			n + `_count{family="tags",operation="CreateTags"}`:                    30,
			n + `_sum{family="tags",operation="CreateTags"}`:                      0.3,
			n + `_count{family="tags",operation="DeleteTags"}`:                    10,
			n + `_sum{family="tags",operation="DeleteTags"}`:                      0.1,
			n + `_bucket{family="tags",operation="DeleteTags",le="0.001"}`:        10,
			n + `_count{family="describe",operation="DescribeNetworkInterfaces"}`: 4,
			n + `_sum{family="describe",operation="DescribeNetworkInterfaces"}`:   2,
			`eni_operator_ec2_api_calls_total{operation="CreateTags"}`:            40,
		}, "describe: 4 requests, mean 0.500 s; tags: 40 requests, mean 0.010 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LimiterWaits(tc.scrape); got != tc.want {
				t.Errorf("LimiterWaits = %q, want %q", got, tc.want)
			}
		})
	}
}
