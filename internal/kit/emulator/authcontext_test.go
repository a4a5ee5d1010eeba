package emulator

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"testing"
)

// ec2Post makes one EC2 Query call and returns its body.
func ec2Post(t *testing.T, srv *httptest.Server, form url.Values) []byte {
	t.Helper()
	form.Set("Version", "2016-11-15")
	resp, err := http.PostForm(srv.URL+"/", form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return body
}

// The authorizations recorded for the NodeENI lifecycle and the tagger's
// writes: the resources each call touches, their tags and VPC as they
// were before the call, the request's tags; DryRun placeholders without
// either; nothing recorded unless asked for.
func TestCallsRecordTheirAuthorizations(t *testing.T) {
	e := New(Options{Region: "eu-west-1", AccountID: "111122223333"})
	srv := httptest.NewServer(e)
	defer srv.Close()
	res, err := e.Load(World{
		VPCs:           []VPCSpec{{Name: "main", CIDR: "10.0.0.0/16"}},
		Subnets:        []SubnetSpec{{Name: "a", VPC: "main", CIDR: "10.0.0.0/20", AvailabilityZone: "eu-west-1a"}},
		SecurityGroups: []SecurityGroupSpec{{Name: "g1", VPC: "main"}, {Name: "g2", VPC: "main", Tags: map[string]string{"tier": "x"}}},
		Instances: []InstanceSpec{{Name: "node", Type: "m5.large", Subnet: "a",
			Tags: map[string]string{"kubernetes.io/cluster/eks": "owned"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	vpc, sub, g1, g2, inst := res.VPCs[0], res.Subnets[0], res.SecurityGroups[0], res.SecurityGroups[1], res.Instances[0].ID
	arn := func(kind, id string) string { return "arn:aws:ec2:eu-west-1:111122223333:" + kind + "/" + id }
	vpcARN := []string{arn("vpc", vpc)}

	ec2Post(t, srv, url.Values{"Action": {"DescribeSubnets"}})
	if calls := e.Calls(); len(calls) != 1 || calls[0].Auth != nil {
		t.Fatalf("recorded without RecordAuth: %+v", calls)
	}
	e.RecordAuth(true)
	e.ResetCounts()

	var created struct {
		ENI string `xml:"networkInterface>networkInterfaceId"`
	}
	body := ec2Post(t, srv, url.Values{"Action": {"CreateNetworkInterface"}, "SubnetId": {sub}, "SecurityGroupId.1": {g1},
		"TagSpecification.1.ResourceType": {"network-interface"},
		"TagSpecification.1.Tag.1.Key":    {"owner"}, "TagSpecification.1.Tag.1.Value": {"me"}})
	if err := xml.Unmarshal(body, &created); err != nil || created.ENI == "" {
		t.Fatalf("create: %v %s", err, body)
	}
	eni := created.ENI
	var attached struct {
		ID string `xml:"attachmentId"`
	}
	for _, form := range []url.Values{
		{"Action": {"CreateTags"}, "ResourceId.1": {eni}, "Tag.1.Key": {"proof"}, "Tag.1.Value": {"p"}},
		{"Action": {"AttachNetworkInterface"}, "NetworkInterfaceId": {eni}, "InstanceId": {inst}, "DeviceIndex": {"1"}},
	} {
		body = ec2Post(t, srv, form)
	}
	if err := xml.Unmarshal(body, &attached); err != nil || attached.ID == "" {
		t.Fatalf("attach: %v %s", err, body)
	}
	for _, form := range []url.Values{
		{"Action": {"ModifyNetworkInterfaceAttribute"}, "NetworkInterfaceId": {eni}, "SecurityGroupId.1": {g2}},
		{"Action": {"DeleteTags"}, "ResourceId.1": {eni}, "Tag.1.Key": {"proof"}},
		{"Action": {"DetachNetworkInterface"}, "AttachmentId": {attached.ID}},
		{"Action": {"CreateTags"}, "DryRun": {"true"}, "ResourceId.1": {"eni-00000000000000000"}, "Tag.1.Key": {"check"}},
		{"Action": {"AssignPrivateIpAddresses"}, "NetworkInterfaceId": {eni}, "SecondaryPrivateIpAddressCount": {"1"}},
	} {
		ec2Post(t, srv, form)
	}

	eniCtx := func(extra map[string][]string) map[string][]string {
		ctx := map[string][]string{"aws:ResourceTag/owner": {"me"}, "ec2:Vpc": vpcARN}
		for k, v := range extra {
			ctx[k] = v
		}
		return ctx
	}
	newENI := map[string][]string{"ec2:Vpc": vpcARN, "aws:RequestTag/owner": {"me"}, "aws:TagKeys": {"owner"}}
	want := [][]AuthRequest{
		{
			{"ec2:CreateNetworkInterface", arn("network-interface", "*"), newENI},
			{"ec2:CreateNetworkInterface", arn("subnet", sub), map[string][]string{"aws:ResourceTag/Name": {"a"}, "ec2:Vpc": vpcARN}},
			{"ec2:CreateNetworkInterface", arn("security-group", g1), map[string][]string{"ec2:Vpc": vpcARN}},
			{"ec2:CreateTags", arn("network-interface", "*"), map[string][]string{"ec2:Vpc": vpcARN, "aws:RequestTag/owner": {"me"},
				"aws:TagKeys": {"owner"}, "ec2:CreateAction": {"CreateNetworkInterface"}}},
		},
		{{"ec2:CreateTags", arn("network-interface", eni), eniCtx(map[string][]string{"aws:TagKeys": {"proof"}, "aws:RequestTag/proof": {"p"}})}},
		{
			{"ec2:AttachNetworkInterface", arn("network-interface", eni), eniCtx(map[string][]string{"aws:ResourceTag/proof": {"p"}})},
			{"ec2:AttachNetworkInterface", arn("instance", inst), map[string][]string{"aws:ResourceTag/Name": {"node"},
				"aws:ResourceTag/kubernetes.io/cluster/eks": {"owned"}}},
		},
		{
			{"ec2:ModifyNetworkInterfaceAttribute", arn("network-interface", eni), eniCtx(map[string][]string{"aws:ResourceTag/proof": {"p"}})},
			{"ec2:ModifyNetworkInterfaceAttribute", arn("security-group", g2), map[string][]string{"aws:ResourceTag/tier": {"x"}, "ec2:Vpc": vpcARN}},
		},
		// Judged on the tag it is about to remove.
		{{"ec2:DeleteTags", arn("network-interface", eni), eniCtx(map[string][]string{"aws:ResourceTag/proof": {"p"}, "aws:TagKeys": {"proof"}})}},
		{
			{"ec2:DetachNetworkInterface", arn("network-interface", eni), eniCtx(nil)},
			{"ec2:DetachNetworkInterface", arn("instance", inst), map[string][]string{"aws:ResourceTag/Name": {"node"},
				"aws:ResourceTag/kubernetes.io/cluster/eks": {"owned"}}},
		},
		{{"ec2:CreateTags", arn("network-interface", "eni-00000000000000000"),
			map[string][]string{"aws:TagKeys": {"check"}, "aws:RequestTag/check": {""}}}},
		nil, // not modelled
	}
	calls := e.Calls()
	if len(calls) != len(want) {
		t.Fatalf("%d calls recorded, want %d", len(calls), len(want))
	}
	for i, c := range calls {
		if !reflect.DeepEqual(c.Auth, want[i]) {
			t.Errorf("%s: auth\n %+v\nwant\n %+v", c.Action, c.Auth, want[i])
		}
	}
	if c := calls[6]; c.Code != "DryRunOperation" {
		t.Errorf("the DryRun call answered %q", c.Code)
	}
	if !slices.Equal(keysOf(e.Counts()), []string{"AssignPrivateIpAddresses", "AttachNetworkInterface", "CreateNetworkInterface",
		"CreateTags", "DeleteTags", "DetachNetworkInterface", "ModifyNetworkInterfaceAttribute"}) {
		t.Errorf("counts %v", e.Counts())
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
